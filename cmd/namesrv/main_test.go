package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as namesrv when NAMESRV_RUN_MAIN is set, so the real main
// runs as a process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("NAMESRV_RUN_MAIN") == "1" {
		os.Args = append([]string{"namesrv"}, strings.Fields(os.Getenv("NAMESRV_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

func command(t *testing.T, args string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NAMESRV_RUN_MAIN=1", "NAMESRV_ARGS="+args)
	return cmd
}

func writeConf(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "namesrv.conf")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBootLineAndGracefulStop(t *testing.T) {
	dir := t.TempDir()
	conf := writeConf(t, "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath="+filepath.Join(dir, "kv.json")+"\nnoSuchKey=1\n")
	cmd := command(t, "-c "+conf)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "The Name Server boot success. serializeType=JSON address=127.0.0.1:") {
		cmd.Process.Kill()
		t.Fatalf("first line %q (%v)", line, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no exit after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "noSuchKey") {
		t.Errorf("unknown key not warned about:\n%s", stderr.String())
	}
}

func TestBadConfigStops(t *testing.T) {
	conf := writeConf(t, "listenPort=nine\n")
	out, err := command(t, "-c "+conf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "listenPort") {
		t.Errorf("err %v, output %q: want a failure naming listenPort", err, out)
	}
}
