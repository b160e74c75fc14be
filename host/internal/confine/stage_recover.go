package confine

import (
	"fmt"
	"os"
	"path/filepath"
)

// stageRecord is the file in each stage naming the git directory it
// stages. It lies beside the overlay's layers, where no command reaches:
// a toolhost killed during a call leaves the stage, and the toolhost that
// finds it applies it to that directory (recoverStages).
const stageRecord = "git-dir"

// recordStage notes in the stage d that it stages the git directory real.
func recordStage(d, real string) error {
	return os.WriteFile(filepath.Join(d, stageRecord), []byte(real+"\n"), 0o600)
}

// stageBases are the directories stages may have been made in for
// stateDir (stageBase), those that exist and are this user's alone: a
// stage is applied to the git directory its record names, so one another
// user planted (in /dev/shm, which anyone can write) must never be.
func stageBases(stateDir string) []string {
	var bases []string
	for _, d := range []string{filepath.Join(stateDir, "sandbox", "stage"), fmt.Sprintf("/dev/shm/toolhost-stage-%d", os.Getuid())} {
		if privateDir(d) {
			bases = append(bases, d)
		}
	}
	return bases
}

// recoverStages applies and removes the stages in base of every toolhost
// that is gone: one killed during a call (SIGKILL, the OOM killer) before
// it applied them. Dropping a stage would lose what the command did:
// after git pack-refs or gc the loose refs are gone from the real refs/
// while the packed-refs that holds them is in the stage. What the command
// wrote is applied as at the end of a call (stageAllows); its processes
// ended with the toolhost that ran them. It returns one sentence for each
// stage applied and each change refused.
func recoverStages(base string) []string {
	var notes []string
	for _, l := range claimLeftovers(base) {
		pid, root := l.pid, l.path
		stages, _ := os.ReadDir(root)
		for _, s := range stages {
			d := filepath.Join(root, s.Name())
			real := firstLine(filepath.Join(d, stageRecord))
			if !isAbsClean(real) {
				continue
			}
			// Applied even with nothing in the upper layer: the sweep of
			// what was bound through (links a command made in objects or
			// refs) runs as part of it.
			up, _ := os.ReadDir(filepath.Join(d, "upper"))
			applied := applyStage(Mount{Kind: MountStage, Source: real, Target: real, Stage: d})
			if len(applied) > 0 || len(up) > 0 {
				notes = append(notes, fmt.Sprintf("sandbox: a toolhost (pid %d) ended during a call before it applied what its command changed in the git directory %s; applied now", pid, real))
			}
			notes = append(notes, applied...)
		}
		removeStages(root)
	}
	return notes
}

// recoverAllStages is recoverStages of every stage base of stateDir.
func recoverAllStages(stateDir string) []string {
	var notes []string
	for _, b := range stageBases(stateDir) {
		notes = append(notes, recoverStages(b)...)
	}
	return notes
}
