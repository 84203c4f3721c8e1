package main

import (
	"fmt"
	"strings"
)

// splitLines splits s after each '\n'; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type diff struct {
	text           string
	removed, added int
}

// op is one line of an edit script: ' ' kept, '-' removed, '+' added.
type op struct {
	kind byte
	a, b int // line indexes in a and b (the one that applies)
}

// maxEdits bounds the edit distance editScript searches (its memory is
// about maxEdits² / 2 ints); past it the changed middle is one hunk that
// removes every old line and adds every new one.
const maxEdits = 1500

// editScript is a shortest edit script from a to b: the common prefix and
// suffix, and Myers' O((N+M)D) algorithm between them.
func editScript(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb)
	if !ok {
		mid = nil
		for i := range ma {
			mid = append(mid, op{'-', i, 0})
		}
		for j := range mb {
			mid = append(mid, op{'+', len(ma), j})
		}
	}
	for _, o := range mid {
		ops = append(ops, op{o.kind, o.a + pre, o.b + pre})
	}
	for i := 0; i < suf; i++ {
		ops = append(ops, op{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers is Myers' algorithm, keeping for each round d the furthest x of
// the diagonals -d..d (so backtracking needs O(D²) memory, not O(D(N+M))).
// ok is false past maxEdits.
func myers(a, b []string) (ops []op, ok bool) {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil, true
	}
	// rounds[d][k+d] is the furthest x on diagonal k after round d.
	var rounds [][]int32
	at := func(d, k int) int {
		if k < -d || k > d {
			return -1
		}
		return int(rounds[d][k+d])
	}
	limit := min(n+m, maxEdits)
	for d := 0; d <= limit; d++ {
		row := make([]int32, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var x int
			switch {
			case d == 0:
				x = 0
			case k == -d || (k != d && at(d-1, k-1) < at(d-1, k+1)):
				x = at(d-1, k+1) // down: an insertion
			default:
				x = at(d-1, k-1) + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			row[k+d] = int32(x)
			if x >= n && y >= m {
				rounds = append(rounds, row)
				return backtrack(at, n, m, d), true
			}
		}
		rounds = append(rounds, row)
	}
	return nil, false
}

func backtrack(at func(d, k int) int, n, m, d int) []op {
	x, y := n, m
	var ops []op
	for ; d > 0; d-- {
		k := x - y
		var prevK int
		if k == -d || (k != d && at(d-1, k-1) < at(d-1, k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(d-1, prevK)
		prevY := prevX - prevK
		// The edit of round d leads from (prevX, prevY) to (midX, midY),
		// then a snake of equal lines to (x, y).
		midX, midY := prevX+1, prevY // right: a deletion
		if prevK == k+1 {
			midX, midY = prevX, prevY+1 // down: an insertion
		}
		for x > midX && y > midY {
			x--
			y--
			ops = append(ops, op{' ', x, y})
		}
		if prevK == k+1 {
			y--
			ops = append(ops, op{'+', x, y})
		} else {
			x--
			ops = append(ops, op{'-', x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		ops = append(ops, op{' ', x, y})
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

// unifiedDiff formats the edit script from a to b as a unified diff with
// context lines of context around each change.
func unifiedDiff(nameA, nameB string, a, b []string, context int) diff {
	ops := editScript(a, b)
	var out strings.Builder
	var d diff
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from `context` kept lines before this change to
		// `context` kept lines after the last change that is at most
		// 2*context kept lines from the next.
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		aStart, bStart, aLen, bLen := -1, -1, 0, 0
		var body strings.Builder
		for _, o := range ops[start:end] {
			switch o.kind {
			case ' ':
				aLen++
				bLen++
				writeLine(&body, ' ', a[o.a])
			case '-':
				aLen++
				d.removed++
				writeLine(&body, '-', a[o.a])
			case '+':
				bLen++
				d.added++
				writeLine(&body, '+', b[o.b])
			}
			if aStart < 0 {
				aStart, bStart = o.a, o.b
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		out.WriteString(body.String())
		i = end
	}
	d.text = out.String()
	return d
}

func writeLine(b *strings.Builder, kind byte, line string) {
	b.WriteByte(kind)
	b.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		b.WriteString("\n\\ No newline at end of file\n")
	}
}

// hunkRange is "start,len" with 1-based start; an empty range names the
// line before it (as diff -u does).
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
