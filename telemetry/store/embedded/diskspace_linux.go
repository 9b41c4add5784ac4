package embedded

import "syscall"

// diskSpace returns the bytes free to unprivileged writers on dir's file system
// and whether it is mounted read-only.
func diskSpace(dir string) (free int64, readOnly bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	return int64(st.Bavail) * int64(st.Bsize), st.Flags&0x1 != 0, nil // ST_RDONLY
}
