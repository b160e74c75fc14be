package egress_test

import (
	"fmt"

	"github.com/toolhost/toolhost/host/internal/egress"
)

// The configuration checks each entry of allowed_domains and
// denied_domains with CheckDomain, naming the key around its error.
func ExampleCheckDomain() {
	for _, entry := range []string{"*.github.com", "proxy.golang.org.", "127.0.0.1", "https://pypi.org", "*"} {
		if err := egress.CheckDomain(entry); err != nil {
			fmt.Printf("[tools.run_command] allowed_domains: %v\n", err)
			continue
		}
		fmt.Printf("%s: ok\n", entry)
	}
	// Output:
	// *.github.com: ok
	// proxy.golang.org.: ok
	// 127.0.0.1: ok
	// [tools.run_command] allowed_domains: "https://pypi.org" is not a host name or pattern; write api.example.com or *.example.com, without a scheme, port, path or user
	// [tools.run_command] allowed_domains: "*" would match every host; list the domains a command needs (pattern *.example.com), or set network = "on" to give commands the host's whole network
}
