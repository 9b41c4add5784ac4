package topology

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDataMatchesShared checks that the copies in testdata/data are still
// byte-for-byte the real data in ../shared/data, where that exists.
func TestDataMatchesShared(t *testing.T) {
	const shared = "../../../shared/data"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("../shared/data is not here (a clean checkout): the copies stand alone")
	}
	n := 0
	err := filepath.WalkDir("testdata/data", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		rel, _ := filepath.Rel("testdata/data", path)
		want, err := os.ReadFile(filepath.Join(shared, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from ../shared/data/%s", path, rel)
		}
		n++
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
