package harness

import (
	"os/exec"
	"syscall"
)

// endWithParent makes the kernel kill an A/B worker when the thread that started it ends, so that a launching
// process that exits at once (a second Ctrl-C, a crash, a kill) leaves no worker behind.
func endWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
