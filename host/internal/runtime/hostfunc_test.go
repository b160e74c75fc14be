package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/testplugin"
)

func TestGranted(t *testing.T) {
	tests := []struct {
		caps []abi.Capability
		want string
		err  string
	}{
		{nil, "event_emit response_take", ""},
		{[]abi.Capability{abi.CapFSRead, abi.CapFSList}, "event_emit fs_diff fs_list fs_lstat fs_read fs_read_lines fs_stat response_take", ""},
		{[]abi.Capability{abi.CapProcExec, abi.CapProcExec}, "event_emit proc_exec proc_run response_take", ""},
		{[]abi.Capability{abi.CapProcJobs}, "event_emit proc_job response_take", ""},
		{[]abi.Capability{abi.CapFSDelete}, "event_emit fs_commit fs_stat response_take", ""},
		{[]abi.Capability{"net.everything"}, "", `unknown capability "net.everything" (known: fs.delete, fs.list, fs.read, fs.search, fs.write, proc.exec, proc.jobs)`},
	}
	for _, tt := range tests {
		got, err := Granted(tt.caps)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Granted(%v): err = %v, want %q", tt.caps, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("Granted(%v) = %v, %v; want %s", tt.caps, got, err, tt.want)
		}
	}
}

// A plugin importing a granted host function that the runtime was not
// given fails to compile with an error naming the function, rather than
// at its first call.
func TestImportedHostFunctionNotConfigured(t *testing.T) {
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p := load(t, rt, "impure")
	err = p.Compile(ctx)
	if err == nil || !strings.Contains(err.Error(), `no host function "fs_read" is configured`) {
		t.Fatalf("Compile: err = %v", err)
	}
}

func TestHostFunctionsChecked(t *testing.T) {
	fn := testHostFunctions()[0]
	for name, fns := range map[string][]HostFunction[testState]{
		"twice":    {fn, fn},
		"built in": {{Name: abi.FnResponseTake, Func: fn.Func}},
		"no func":  {{Name: abi.FnFSStat}},
	} {
		if _, err := New(context.Background(), Config[testState]{HostFunctions: fns}); err == nil {
			t.Errorf("%s: New accepted the host functions", name)
		}
	}
}
