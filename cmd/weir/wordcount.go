package main

import (
	stdbytes "bytes"
	"io"
	"os"
)

// countInputLines counts the lines of files (the fault injector's span).
func countInputLines(files []string) (int64, error) {
	var n int64
	buf := make([]byte, 64<<10)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, err
		}
		for {
			k, err := f.Read(buf)
			n += int64(stdbytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return 0, err
			}
		}
		f.Close()
	}
	return n, nil
}
