package kit

import (
	"reflect"
	"strings"
	"testing"
)

func TestReportsAreKeptInOrderAndTakenOnce(t *testing.T) {
	TakeReports()
	Progress(0, TotalUnknown, "")
	Progress(3, 10, "files")
	Log(LogWarning, "%d of %s", 7, "ten")
	Log(LogLevel(42), "odd level")
	Progress(4, 10, "bad \xff byte")
	Log(LogDebug, "caf\xc3")
	want := []Report{
		ProgressReport{Done: 0, Total: TotalUnknown},
		ProgressReport{Done: 3, Total: 10, Message: "files"},
		LogReport{Level: LogWarning, Message: "7 of ten"},
		LogReport{Level: LogError, Message: "odd level"}, // out of range
		ProgressReport{Done: 4, Total: 10, Message: "bad \uFFFD byte"},
		LogReport{Level: LogDebug, Message: "caf\uFFFD"},
	}
	if got := TakeReports(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports\n%+v\nwant\n%+v", got, want)
	}
	if got := TakeReports(); got != nil {
		t.Fatalf("taken twice: %+v", got)
	}
}

func TestLogLevelsAreTheContractsOrder(t *testing.T) {
	// The ABI values: the cases of `log-level`, in declaration order.
	names := []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	for i, name := range names {
		if got := LogLevel(i).String(); got != name {
			t.Errorf("LogLevel(%d) is %q, want %q", i, got, name)
		}
	}
	if LogEmergency != 7 || LogError != 4 {
		t.Fatal("the levels moved")
	}
	if got := LogLevel(8).String(); got != "LogLevel(8)" {
		t.Fatal(got)
	}
}

func TestCancelForTest(t *testing.T) {
	if Cancelled() {
		t.Fatal("cancelled before anyone cancelled")
	}
	CancelForTest(true)
	defer CancelForTest(false)
	if !Cancelled() {
		t.Fatal("not cancelled")
	}
}

// A tool that reports while it runs and stops when cancelled, through the
// dispatch the component runs.
func TestReportsThroughExecute(t *testing.T) {
	serve(t, echoTool(func(a echoArgs) (echoValue, error) {
		for i := uint64(1); i <= 2; i++ {
			if Cancelled() {
				return echoValue{}, Fail("cancelled", "cancelled after %d steps", i-1)
			}
			Progress(i, 2, a.Text)
		}
		Log(LogNotice, "%d steps done", 2)
		return echo(a)
	}, nil))
	TakeReports()
	if _, f := Execute("echo", []byte(`{"text":"step"}`)); f != nil {
		t.Fatal(f)
	}
	want := []Report{
		ProgressReport{Done: 1, Total: 2, Message: "step"},
		ProgressReport{Done: 2, Total: 2, Message: "step"},
		LogReport{Level: LogNotice, Message: "2 steps done"},
	}
	if got := TakeReports(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
	CancelForTest(true)
	defer CancelForTest(false)
	_, f := Execute("echo", []byte(`{"text":"step"}`))
	if f == nil || f.Code != "cancelled" || !strings.Contains(f.Message, "after 0 steps") {
		t.Fatalf("cancelled: %v", f)
	}
	if got := TakeReports(); len(got) != 0 {
		t.Fatalf("reports after cancelling: %+v", got)
	}
}
