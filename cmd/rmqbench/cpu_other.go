//go:build !unix

package main

import "time"

// processCPU is not reported on this platform.
func processCPU() time.Duration { return -1 }
