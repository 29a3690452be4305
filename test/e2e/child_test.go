package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// A consumer that has to leave its group for good runs in a child process (the test
// binary started again). The official Go client's Shutdown does not stop every goroutine
// first: a heartbeat or rebalance still under way dials the broker again after the
// connections were closed and registers the consumer over a new connection that nothing
// ever closes. The broker then lists that client for channelExpiredTimeout (120 s) and
// the group allocates queues to it. A process that exits closes every connection it had.

// childEnv names the variable that makes the test binary a child consumer.
const childEnv = "E2E_CHILD_CONSUMER"

// childConsumerSpec is what a child consumer is told, as JSON in childEnv.
type childConsumerSpec struct {
	Namesrv, Group, Topic, Instance string
	Orderly                         bool
}

// childMessagePrefix starts each line of the child's stdout that reports a message body.
const childMessagePrefix = "e2e-child-message "

// runChildConsumer is the child's main: it consumes until SIGTERM, printing each message
// body, then shuts the consumer down and exits with the process.
func runChildConsumer(specJSON string) int {
	var s childConsumerSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		fmt.Fprintln(os.Stderr, "child consumer:", err)
		return 2
	}
	c, err := newFirstOffsetConsumer(s.Namesrv, s.Group, s.Instance, s.Orderly)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child consumer:", err)
		return 2
	}
	var out sync.Mutex
	err = c.Subscribe(s.Topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			out.Lock()
			defer out.Unlock()
			for _, m := range msgs {
				fmt.Fprintf(os.Stdout, "%s%s\n", childMessagePrefix, m.Body)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child consumer:", err)
		return 2
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	<-term
	c.Shutdown()
	return 0
}

// newFirstOffsetConsumer is a clustering push consumer of group that starts at the first
// offset, orderly or not: the child's, and the orderly tests' own.
func newFirstOffsetConsumer(namesrv, group, inst string, orderly bool) (rocketmq.PushConsumer, error) {
	return rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrv}), consumer.WithGroupName(group),
		consumer.WithInstance(inst), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering), consumer.WithConsumerOrder(orderly))
}

// childConsumer is a consumer running in a child process.
type childConsumer struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when its stdout ended
}

// startChildConsumer starts a child consumer and hands every message body it consumes to
// onMessage. It is stopped at the test's end if not before.
func startChildConsumer(t *testing.T, s childConsumerSpec, onMessage func(body string)) *childConsumer {
	t.Helper()
	spec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childConsumer{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if body, ok := strings.CutPrefix(sc.Text(), childMessagePrefix); ok {
				onMessage(body)
			}
		}
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop asks the child to shut its consumer down and waits until the process is gone
// (killing it after 20 s), so that every connection it had is closed.
func (c *childConsumer) stop(t *testing.T) {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Errorf("child consumer %d did not stop within 20s; killed", c.cmd.Process.Pid)
		_ = c.cmd.Process.Kill()
	}
	_ = c.cmd.Wait()
}
