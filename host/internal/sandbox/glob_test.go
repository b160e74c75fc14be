package sandbox

import (
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// The literal checked before a pattern never changes a verdict (make bench): every pattern, on every path, matches exactly when
// doublestar alone says so.
func TestGlobAgreesWithDoublestar(t *testing.T) {
	patterns := append(append(DefaultDeniedPatterns(), systemCredentialPatterns()...),
		"secrets/**", "**/secrets/**", "**/.env", "**/.env.*", "*.log", "a/**/b", "**", "*", "?", "**/?x?",
		"/etc/shadow*", "**/node_modules/**", "build/*/out", "**/{a,b}.txt", "**/[ab].txt", `**/\*.txt`, "x/**", "**/x")
	paths := []string{"", ".", "x", "a/b", "a/x/b", "a/x/y/b", ".ssh", ".ssh/id", "home/u/.ssh", "/home/u/.ssh/config",
		"id_rsa", "k/id_rsa.pub", "c.pem", "d/c.pem.bak", "/etc/shadow", "/etc/shadow-", "etc/shadow", "secrets", "secrets/k",
		"w/secrets/k", ".env", "w/.env.local", "app.log", "w/app.log", "node_modules/x", "w/node_modules", "build/a/out",
		"build/a/b/out", "a.txt", "w/b.txt", "c.txt", "*.txt", "w/*.txt", "x/y", "y/x", "axa", "w/axa", "x/", "/x"}
	for _, p := range patterns {
		g := newGlob(p)
		for _, name := range paths {
			want, err := doublestar.Match(p, name)
			if err != nil {
				t.Fatalf("pattern %q: %v", p, err)
			}
			if got := g.match(name); got != want {
				t.Errorf("pattern %q (literal %q) on %q: %v, doublestar says %v", p, g.need, name, got, want)
			}
		}
	}
}

// FuzzGlob holds the literal to doublestar on any pattern and path.
func FuzzGlob(f *testing.F) {
	f.Add("**/.ssh/**", "/home/u/.ssh/config")
	f.Add("a/**/b", "a/b")
	f.Add("**/?x?", "w/axa")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !doublestar.ValidatePattern(pattern) {
			return
		}
		want := doublestar.MatchUnvalidated(pattern, name)
		if got := newGlob(pattern).match(name); got != want {
			t.Errorf("pattern %q on %q: %v, doublestar says %v", pattern, name, got, want)
		}
	})
}
