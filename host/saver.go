package host

import "sync"

// saver writes conversations' read caches to the journal off the calls'
// path, as soon as a read is recorded: a save is a step log record (a
// database transaction for a journal in memory), and done here the saves
// of a busy conversation coalesce. A read record lost to a crash before its save makes a later
// overwrite of that file refused as stale, never allowed; Close writes
// what is pending.
type saver struct {
	save func(conversation string)

	mu      sync.Mutex
	pending map[string]bool

	wake chan struct{} // holds one token while saves are pending
	stop chan struct{}
	done chan struct{}
}

func newSaver(save func(string)) *saver {
	s := &saver{save: save, pending: map[string]bool{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// soon schedules a save of conversation.
func (s *saver) soon(conversation string) {
	s.mu.Lock()
	s.pending[conversation] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *saver) run() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
			s.flush()
		case <-s.stop:
			s.flush()
			return
		}
	}
}

// flush saves every pending conversation.
func (s *saver) flush() {
	s.mu.Lock()
	pending := s.pending
	s.pending = map[string]bool{}
	s.mu.Unlock()
	for conversation := range pending {
		s.save(conversation)
	}
}

// close saves what is pending and stops.
func (s *saver) close() {
	close(s.stop)
	<-s.done
}
