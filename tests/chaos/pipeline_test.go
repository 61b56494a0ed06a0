package chaos

import (
	"fmt"
	"strings"
	"testing"
)

// pipeCase is four requests on two input partitions and their commands in
// input order, one each.
func pipeCase() ([]PipeRequest, []PipeCommand) {
	reqs := []PipeRequest{{0, 0}, {0, 1}, {1, 0}, {1, 1}}
	var cmds []PipeCommand
	for i, q := range []PipeRequest{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
		cmds = append(cmds, PipeCommand{Offset: int64(i), Value: fmt.Sprintf("in=%d/%d req=%d member=go-1", q.Partition, q.Offset, i), Token: "7/0"})
	}
	return reqs, cmds
}

func TestCheckPipelineExactlyOnce(t *testing.T) {
	reqs, cmds := pipeCase()
	r := CheckPipeline(reqs, cmds)
	if !r.ExactlyOnce() || r.Done != 4 || r.Requests != 4 || r.Commands != 4 || r.Terms != 1 {
		t.Fatalf("every request once in order: got %+v", r)
	}
	if fmt.Sprint(r.PerPartition) != "[2 2]" {
		t.Fatalf("requests by partition %v, want [2 2]", r.PerPartition)
	}
}

func TestCheckPipelineDuplicate(t *testing.T) {
	reqs, cmds := pipeCase()
	// A deposed leader's command of 1/0 committed again by a second term.
	cmds = append(cmds, PipeCommand{Offset: 4, Value: "in=1/0 req=2 member=go-2", Token: "7/1"})
	r := CheckPipeline(reqs, cmds)
	if r.ExactlyOnce() || r.Duplicated != 1 || r.Missing != 0 || r.OutOfOrder != 0 || r.Terms != 2 {
		t.Fatalf("one duplicate: got %+v", r)
	}
	if len(r.Examples) != 1 || !strings.Contains(r.Examples[0], "request 1/0 has a command again at offset 4") {
		t.Fatalf("examples %q", r.Examples)
	}
}

func TestCheckPipelineGap(t *testing.T) {
	reqs, cmds := pipeCase()
	cmds = append(cmds[:2], cmds[3]) // 0/1's command is lost
	r := CheckPipeline(reqs, cmds)
	if r.ExactlyOnce() || r.Missing != 1 || r.Duplicated != 0 || r.Done != 3 {
		t.Fatalf("one gap: got %+v", r)
	}
	if len(r.Examples) != 1 || r.Examples[0] != "request 0/1 has no command" {
		t.Fatalf("examples %q", r.Examples)
	}
}

func TestCheckPipelineOrderAndUnknown(t *testing.T) {
	reqs, cmds := pipeCase()
	cmds[0], cmds[2] = cmds[2], cmds[0] // 0/1 before 0/0
	cmds = append(cmds, PipeCommand{Offset: 9, Value: "in=3/0 req=9"}, PipeCommand{Offset: 10, Value: "garbage"})
	r := CheckPipeline(reqs, cmds)
	if r.ExactlyOnce() || r.OutOfOrder != 1 || r.Unknown != 2 || r.Missing != 0 || r.Duplicated != 0 {
		t.Fatalf("one out of order, two unknown: got %+v", r)
	}
}
