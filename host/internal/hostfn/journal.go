package hostfn

// CallJournal is the journal as one call's host functions see it: they
// record there, before doing it, what the call does that outlives it, so
// that a crash leaves a record of it (issue 12). A nil CallJournal records
// nothing.
type CallJournal interface {
	// ProcessStarted records that the call's command runs in the process
	// group and session pid, as soon as they exist and before toolhost
	// waits on them, so that recovery after a crash can kill what is left
	// of them. An error stops the command: a command the journal cannot
	// record does not go on running.
	ProcessStarted(pid int) error
}
