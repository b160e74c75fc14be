package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// [tools.jobs] has the documented defaults, refuses values that cannot
// work, naming the key, and a project can only lower it.
func TestJobs(t *testing.T) {
	want := Jobs{RingBytes: 1 << 20, MaxPerConversation: 8, MaxTotal: 32, MaxSeconds: 3600,
		SessionEndGraceSeconds: 10, KeepOutputBytes: 64 << 20, KeepTotalBytes: 1 << 30}
	if got := Default().Tools.Jobs; !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	for _, tt := range []struct {
		change func(*Jobs)
		key    string
		msg    string
	}{
		{func(j *Jobs) { j.RingBytes = 100 }, "tools.jobs.ring_bytes", "between 4KiB"},
		{func(j *Jobs) { j.MaxPerConversation = 0 }, "tools.jobs.max_per_conversation", "positive"},
		{func(j *Jobs) { j.MaxTotal = -1 }, "tools.jobs.max_total", "positive"},
		{func(j *Jobs) { j.MaxSeconds = -1 }, "tools.jobs.max_seconds", "0 or more"},
		{func(j *Jobs) { j.SessionEndGraceSeconds = -1 }, "tools.jobs.session_end_grace_seconds", "0 or more"},
		{func(j *Jobs) { j.KeepOutputBytes = 2 << 30 }, "tools.jobs.keep_output_bytes", "1GiB"},
		{func(j *Jobs) { j.KeepOutputBytes, j.KeepTotalBytes = 0, 0 }, "tools.jobs.keep_output_bytes", "between"},
	} {
		c := Default()
		tt.change(&c.Tools.Jobs)
		var ke *KeyError
		if err := c.Validate(); !errors.As(err, &ke) || ke.Key != tt.key || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Validate() = %v, want a KeyError naming %q", tt.key, err, tt.msg)
		}
	}
	op := Default()
	p := Default()
	p.Tools.Jobs.MaxTotal = 4            // lower: kept
	p.Tools.Jobs.MaxPerConversation = 99 // higher: ignored
	p.Tools.Jobs.MaxSeconds = 0          // no limit: ignored
	out, ignored := op.NarrowedBy(p)
	if j := out.Tools.Jobs; j.MaxTotal != 4 || j.MaxPerConversation != 8 || j.MaxSeconds != 3600 {
		t.Errorf("narrowed jobs = %+v", j)
	}
	if s := strings.Join(ignored, "\n"); !strings.Contains(s, "tools.jobs.max_per_conversation") || !strings.Contains(s, "tools.jobs.max_seconds") || len(ignored) != 2 {
		t.Errorf("ignored = %q", ignored)
	}
}
