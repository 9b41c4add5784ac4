//go:build !linux

package embedded

import "errors"

// diskSpace is not implemented here: Append relies on the write itself.
func diskSpace(string) (int64, bool, error) {
	return 0, false, errors.New("free space unknown on this system")
}
