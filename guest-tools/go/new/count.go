package main

// Counting lines and bytes: the standard library only, no kit, so that
// `go test count.go count_test.go` runs anywhere (see README.md).

import (
	"bytes"
	"io"
)

// count returns the lines and bytes r yields, read 64 KiB at a time (a file
// of any size takes constant memory). A last line without a newline counts
// too.
func count(r io.Reader) (lines, size int64, err error) {
	buf := make([]byte, 64<<10)
	last := byte('\n')
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
			size += int64(n)
			last = buf[n-1]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, rerr
		}
	}
	if last != '\n' {
		lines++
	}
	return lines, size, nil
}
