package store

import "syscall"

type sysinfo = syscall.Sysinfo_t

// readSysinfo returns total RAM in bytes, or 0.
func readSysinfo(si *sysinfo) int64 {
	if err := syscall.Sysinfo(si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
