package kit

import (
	"fmt"
	"math"
	"strings"
	"sync"
)

// What a running tool tells its caller, and asks about its call (contract
// 0.3.0's `context` import):
//
//	for i, path := range files {
//		if kit.Cancelled() { // the caller cancelled: stop cleanly
//			return Value{}, kit.Fail("cancelled", "cancelled after %d files", i)
//		}
//		hash(path)
//		kit.Progress(uint64(i+1), uint64(len(files)), path)
//	}
//	kit.Log(kit.LogInfo, "%d files hashed", len(files))
//
// Every function is cheap and never fails. The host bounds what a call
// reports (a rate and a byte budget set by its policy; past them reports
// are dropped, the latest progress still delivered at the end), records it
// with the call, and forwards it to the client only when the client asked
// for it: report per file or per megabyte, not in an inner loop.
//
// Inside a component (component.go) the functions call the import.
// Natively reports are kept for [TakeReports], and [Cancelled] answers what
// [CancelForTest] set.

// LogLevel is the severity of a log message (the contract's `log-level`,
// the syslog levels MCP uses), least to most severe.
type LogLevel uint8

// The log levels, in the contract's order (their ABI values).
const (
	LogDebug LogLevel = iota
	LogInfo
	LogNotice
	LogWarning
	LogError
	LogCritical
	LogAlert
	LogEmergency
)

var levelNames = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// String is the level's name in the contract ("warning").
func (l LogLevel) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("LogLevel(%d)", uint8(l))
}

// TotalUnknown is [Progress]'s total when the total is not known. (A total
// of math.MaxUint64 units cannot be reported: it reads as unknown.)
const TotalUnknown uint64 = math.MaxUint64

// Progress reports progress: done units of total ([TotalUnknown] when not
// known), with a short message ("" for none). done should grow from call
// to call.
func Progress(done, total uint64, message string) {
	backend.progress(done, total, strings.ToValidUTF8(message, "\uFFFD"))
}

// Log logs a message, formatted as by fmt.Sprintf, for the person or agent
// at the client. A level past [LogEmergency] is logged as [LogError].
func Log(level LogLevel, format string, args ...any) {
	if level > LogEmergency {
		level = LogError
	}
	backend.log(level, strings.ToValidUTF8(fmt.Sprintf(format, args...), "\uFFFD"))
}

// Cancelled reports whether the caller cancelled the call: check it between
// units of work and return early (kit.Fail("cancelled", ...)). The host
// stops the instance anyway; checking lets the tool stop where it chooses.
func Cancelled() bool { return backend.cancelled() }

// Report is one report, as kept natively for tests: a [ProgressReport] or a
// [LogReport].
type Report interface{ report() }

// ProgressReport is a [Progress] call, as kept natively.
type ProgressReport struct {
	Done, Total uint64 // Total: TotalUnknown for none
	Message     string // "" for none
}

// LogReport is a [Log] call, as kept natively.
type LogReport struct {
	Level   LogLevel
	Message string
}

func (ProgressReport) report() {}
func (LogReport) report()      {}

// TakeReports returns the reports made natively since its last call, oldest
// first, and forgets them. Inside a component the reports go to the host:
// it returns none.
func TakeReports() []Report {
	native.mu.Lock()
	defer native.mu.Unlock()
	taken := native.reports
	native.reports = nil
	return taken
}

// CancelForTest makes [Cancelled] answer cancelled natively (until it is
// called again). Inside a component only the host cancels: it does nothing
// there.
func CancelForTest(cancelled bool) {
	native.mu.Lock()
	defer native.mu.Unlock()
	native.isCancelled = cancelled
}

// contextBackend is where the context's calls go, their strings already
// valid UTF-8.
type contextBackend interface {
	progress(done, total uint64, message string)
	log(level LogLevel, message string)
	cancelled() bool
}

// nativeContext keeps the reports for TakeReports.
type nativeContext struct {
	mu          sync.Mutex
	reports     []Report
	isCancelled bool
}

func (n *nativeContext) progress(done, total uint64, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reports = append(n.reports, ProgressReport{Done: done, Total: total, Message: message})
}

func (n *nativeContext) log(level LogLevel, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reports = append(n.reports, LogReport{Level: level, Message: message})
}

func (n *nativeContext) cancelled() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isCancelled
}

var native = &nativeContext{}

// backend is native, or the import inside a component (component.go's
// init sets it).
var backend contextBackend = native
