package secrets

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// Every entry is a clean path of the kind its list says
// (relative to $HOME, or absolute under /etc), listed once, so that
// joining it to a directory names exactly the secret.
func TestListsAreClean(t *testing.T) {
	lists := []struct {
		name     string
		entries  []string
		absolute bool
	}{
		{"Home", Home(), false},
		{"Etc", Etc(), true},
		{"EtcGlobs", EtcGlobs(), true},
	}
	for _, l := range lists {
		t.Run(l.name, func(t *testing.T) {
			if len(l.entries) == 0 {
				t.Fatal("empty")
			}
			seen := map[string]bool{}
			for _, e := range l.entries {
				if path.Clean(e) != e || path.IsAbs(e) != l.absolute || e == "." || strings.HasPrefix(e, "..") {
					t.Errorf("%q is not a clean %s path", e, map[bool]string{true: "absolute", false: "home-relative"}[l.absolute])
				}
				if l.absolute && !strings.HasPrefix(e, "/etc/") {
					t.Errorf("%q is not under /etc", e)
				}
				if seen[e] {
					t.Errorf("%q is listed twice", e)
				}
				seen[e] = true
			}
		})
	}
}

// The credentials the issue names are all listed, and a
// caller changing its slice changes nobody else's.
func TestHome(t *testing.T) {
	for _, want := range []string{".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".git-credentials", ".docker", ".kube", ".config/gcloud", ".npmrc", ".pypirc", ".cargo/credentials", ".mozilla"} {
		if !slices.Contains(Home(), want) {
			t.Errorf("Home() lacks %q", want)
		}
	}
	h := Home()
	h[0] = "changed"
	if Home()[0] == "changed" {
		t.Error("Home() returned a shared slice")
	}
}
