package main

// Unit tests of the counting, natively: go test count.go count_test.go

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	for text, want := range map[string][2]int64{
		"":                         {0, 0},
		"one\ntwo\n":               {2, 8},
		"one\ntwo":                 {2, 7}, // a last line without a newline
		"\n\n":                     {2, 2},
		strings.Repeat("x\n", 1e5): {1e5, 2e5}, // across the 64 KiB reads
	} {
		lines, size, err := count(strings.NewReader(text))
		if err != nil || lines != want[0] || size != want[1] {
			t.Errorf("%.20q: %d lines, %d bytes, %v; want %d, %d", text, lines, size, err, want[0], want[1])
		}
	}
}
