//go:build !wasip1

package sdk

import "github.com/toolhost/toolhost/abi"

// Outside WebAssembly there is no host: every host function fails.

var notGranted = []byte(`{"kind":"ExecutionFailed","message":"toolhost host functions exist only inside a toolhost plugin"}`)

func unavailable() int64 { return abi.EncodeFailure(abi.StatusNotGranted, uint32(len(notGranted))) }

func takeResponse(n uint32) []byte {
	return append([]byte(nil), notGranted[:min(int(n), len(notGranted))]...)
}

func fsStat(string) int64                              { return unavailable() }
func fsLstat(string) int64                             { return unavailable() }
func fsRead(string, int64, int64, uint32) int64        { return unavailable() }
func fsReadLines(string, uint32, uint32, uint32) int64 { return unavailable() }
func fsList(string, uint32, uint32, uint32) int64      { return unavailable() }
func fsWrite(string, []byte, uint32) int64             { return unavailable() }
func fsDiff(string, []byte) int64                      { return unavailable() }
func eventEmit(uint32, []byte) int64                   { return unavailable() }
func fsCommit([]byte, uint32) int64                    { return unavailable() }
func procRun(string, string) int64                     { return unavailable() }
func fsSearch([]byte, uint32) int64                    { return unavailable() }
func procExec([]byte, uint32) int64                    { return unavailable() }
func procJob([]byte, uint32) int64                     { return unavailable() }
