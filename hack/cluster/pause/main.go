// Command pause is the sandbox process of every pod on the test cluster: it holds the
// pod's namespaces and waits for SIGTERM or SIGINT, as registry.k8s.io/pause does. It is
// imported into containerd under that tag by hack/cluster/up.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// As PID 1 of the pod it also reaps orphans, or they would stay zombies.
	signal.Notify(sig, syscall.SIGCHLD)
	for s := range sig {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
