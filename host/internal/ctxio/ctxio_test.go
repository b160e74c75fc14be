package ctxio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	content := strings.Repeat("0123456789", 1000)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// cancelAfter cancels the context after that many bytes were
		// read; -1 never does.
		cancelAfter int
		wantErr     error
	}{
		{"live context reads everything", -1, nil},
		{"cancelled before the first read", 0, context.Canceled},
		{"cancelled midway", 4096, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancelAfter == 0 {
				cancel()
			}
			// Reads of 1 KiB, so that a cancellation lands between two.
			r := Reader(ctx, io.LimitReader(f, int64(len(content))))
			var got []byte
			buf := make([]byte, 1024)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if tt.cancelAfter > 0 && len(got) >= tt.cancelAfter {
					cancel()
				}
				if err == io.EOF {
					if tt.wantErr != nil {
						t.Fatalf("read to the end, want %v", tt.wantErr)
					}
					break
				}
				if err != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("err = %v, want %v", err, tt.wantErr)
					}
					break
				}
			}
			switch {
			case tt.wantErr == nil && string(got) != content:
				t.Errorf("read %d bytes, want the file's %d", len(got), len(content))
			case tt.wantErr != nil && len(got) > max(tt.cancelAfter, 0)+len(buf):
				t.Errorf("read %d bytes after a cancellation at %d", len(got), tt.cancelAfter)
			}
		})
	}
	if err := iotest.TestReader(Reader(t.Context(), strings.NewReader(content)), []byte(content)); err != nil {
		t.Error(err)
	}
}
