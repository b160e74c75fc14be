package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// acquire returns an idle instance, or a new one; the plugin is then
// busy (enter) until the caller calls leave.
func (p *Plugin[S]) acquire(ctx context.Context) (*instance[S], error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	// A pool Close emptied is not an error here: the call holds the
	// compiled module (enter) and runs on an instance of its own.
	if inst, ok, _ := p.idle.Get(); ok {
		return inst, nil
	}
	inst, err := p.newInstance(ctx)
	if err != nil {
		p.leave()
	}
	return inst, err
}

// newInstance creates and starts an instance.
func (p *Plugin[S]) newInstance(ctx context.Context) (*instance[S], error) {
	c, err := p.compile(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := p.startupContext(ctx)
	defer cancel()
	start := time.Now()
	inst, err := p.instantiate(ctx, sctx, c)
	if err != nil {
		p.rt.log.Warn("plugin did not start", "plugin", p.name(), "elapsed", time.Since(start), "err", err)
		return nil, err
	}
	p.rt.log.Debug("instantiated plugin", "plugin", p.name(), "elapsed", time.Since(start))
	if p.packed && !p.verified.Load() {
		if err := p.verify(ctx, sctx, inst); err != nil {
			inst.close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return inst, nil
}

// release returns an instance that finished a call cleanly to the pool,
// unless the pool is full, the plugin closed, or the instance's memory
// grew past Config.IdleMemoryBytes: a guest's memory never shrinks, so
// pooled it would hold what one call grew it to for good.
func (p *Plugin[S]) release(inst *instance[S]) {
	// The context-checking engine may close a module as its deadline
	// fires even though the guest had returned: never pool a closed one.
	if inst.mod.IsClosed() {
		inst.close(context.Background())
		return
	}
	if mem := inst.mod.Memory(); mem != nil && uint64(mem.Size()) > p.rt.cfg.IdleMemoryBytes {
		p.rt.log.Debug("closing a plugin instance whose memory grew past the bound of a warm one", "plugin", p.name(), "memory", mem.Size(), "bound", p.rt.cfg.IdleMemoryBytes)
		inst.close(context.Background())
		p.rt.reclaim.Request()
		return
	}
	if !p.idle.Put(inst) {
		inst.close(context.Background())
	}
}

// enter counts an operation that uses the compiled module, so that Close
// leaves it in place until the operation ends (leave).
func (p *Plugin[S]) enter() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.errClosed()
	}
	p.busy++
	return nil
}

// leave ends an operation; the last one to end after Close releases the
// compiled module.
func (p *Plugin[S]) leave() {
	p.mu.Lock()
	p.busy--
	last := p.closed && p.busy == 0
	p.mu.Unlock()
	if last {
		p.releaseCompiled(context.Background())
	}
}

// ErrClosed reports a plugin or runtime used after its Close.
var ErrClosed = errors.New("closed")

func (p *Plugin[S]) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Plugin[S]) errClosed() error { return fmt.Errorf("plugin %s is %w", p.name(), ErrClosed) }

// Close releases the plugin's warm instances, its compiled module and its
// host module. Calls in flight finish (or fail, if the runtime is closing
// too); their instances are closed rather than pooled, and the compiled
// module is released when the last of them ends. Calls after Close fail
// with ErrClosed. Close is safe to call more than once.
func (p *Plugin[S]) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	last := p.busy == 0
	p.mu.Unlock()
	idle, _ := p.idle.Close()
	for _, inst := range idle {
		inst.close(ctx)
	}
	if last {
		p.releaseCompiled(ctx)
	}
	p.rt.forget(p)
	return nil
}

func (p *Plugin[S]) releaseCompiled(ctx context.Context) {
	p.compileMu.Lock()
	defer p.compileMu.Unlock()
	if c := p.compiled; c != nil {
		c.host.Close(ctx)
		c.module.Close(ctx)
		p.compiled = nil
	}
}

// Warm compiles the plugin and fills its pool with n instances, so the
// first calls do not pay for compilation or instantiation.
func (p *Plugin[S]) Warm(ctx context.Context, n int) error {
	var insts []*instance[S]
	defer func() {
		for _, inst := range insts {
			p.release(inst)
			p.leave()
		}
	}()
	for range min(n, p.rt.cfg.PoolSize) {
		inst, err := p.acquire(ctx)
		if err != nil {
			return err
		}
		insts = append(insts, inst)
	}
	return nil
}
