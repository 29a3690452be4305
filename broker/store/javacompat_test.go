//go:build compat

// Run by make test-compat (hack/compat.sh), which fetches the jars first;
// the compat tag keeps it out of make test, where it could only skip.

package store

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// javaLibDir is where hack/compat.sh put the RocketMQ 4.9.7 jars.
func javaLibDir() string { return os.Getenv("ROCKETMQ_JAVA_LIB") }

func runJava(t *testing.T, dir, lib string, args ...string) string {
	t.Helper()
	cmdArgs := append([]string{"--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports",
		"java.base/jdk.internal.ref=ALL-UNNAMED", "-Xmx256m", "-Duser.home=" + dir,
		"-cp", lib + "/*:" + dir, "JavaStoreCompat"}, args...)
	cmd := exec.Command("java", cmdArgs...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestJavaStoreCompat checks byte compatibility with RocketMQ 4.9.7 both
// ways: we open and serve a store written by Java's DefaultMessageStore
// (rebuilding byte-identical consume queues), and Java's MessageDecoder
// decodes records we wrote. Needs java, javac and the RocketMQ jars.
func TestJavaStoreCompat(t *testing.T) {
	lib := javaLibDir()
	if _, err := exec.LookPath("javac"); err != nil || lib == "" {
		t.Fatal("needs javac and the RocketMQ 4.9.7 jars in ROCKETMQ_JAVA_LIB: run it with make test-compat")
	}
	jdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(jdir, "JavaStoreCompat.java"), []byte(javaCompatSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-cp", lib+"/*", "-d", jdir, filepath.Join(jdir, "JavaStoreCompat.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	root := filepath.Join(t.TempDir(), "store")
	if out := runJava(t, jdir, lib, "write", root, "700"); !strings.Contains(out, "WROTE 700") {
		t.Fatalf("java writer: %s", out)
	}
	javaCQ, err := os.ReadFile(filepath.Join(root, "consumequeue", "JavaTopic", "1", "00000000000000000000"))
	if err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t)
	cfg.StorePathRootDir = root
	cfg.MappedFileSizeConsumeQueue = 100 * CQEntrySize
	os.RemoveAll(filepath.Join(root, "consumequeue")) // rebuild them from Java's commitlog
	s := mustOpen(t, cfg)
	defer s.Close()
	ourCQ, err := os.ReadFile(filepath.Join(root, "consumequeue", "JavaTopic", "1", "00000000000000000000"))
	if err != nil || !bytes.Equal(ourCQ, javaCQ) {
		t.Fatalf("rebuilt consume queue differs from Java's (err %v)", err)
	}
	for q := int32(0); q < 2; q++ {
		msgs := readAll(t, s, "JavaTopic", q)
		if len(msgs) != 350 {
			t.Fatalf("queue %d: %d messages from the Java store", q, len(msgs))
		}
		for i, m := range msgs {
			n := 2*i + int(q)
			if string(m.Body) != fmt.Sprint("java-body-", n) || m.Property("TAGS") != "TagJ" || m.Property("KEYS") != fmt.Sprint("jk", n) {
				t.Fatalf("queue %d offset %d: %q %q", q, i, m.Body, m.Properties)
			}
		}
	}
	if got := s.QueryMessage("JavaTopic", "jk77", 4, 0, time.Now().UnixMilli()+1000); len(got) != 1 {
		t.Fatalf("index over Java records: %v", got)
	}

	// Our records, decoded by Java.
	r := mustPut(t, s, newMsg("GoTopic", 3, "go-body", map[string]string{"TAGS": "TagG", "KEYS": "gk"}))
	waitDispatched(t, s)
	g := s.GetMessage("GoTopic", 3, 0, 1, 0, nil)
	if g.Status != Found {
		t.Fatalf("GoTopic: %v", g.Status)
	}
	file := filepath.Join(jdir, "records.bin")
	os.WriteFile(file, g.Messages[0], 0o644)
	g.Release()
	out := runJava(t, jdir, lib, "decode", file)
	want := fmt.Sprintf("MSG GoTopic 3 0 %d %s TagG gk go-body crc=%d", r.PhysicalOffset, r.MsgID(), message.BodyCRC([]byte("go-body")))
	if !strings.Contains(out, want) {
		t.Fatalf("Java decoded:\n%s\nwant line %q", out, want)
	}
}

const javaCompatSource = `import java.io.File;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.*;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public class JavaStoreCompat {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("write")) {
            MessageStoreConfig cfg = new MessageStoreConfig();
            cfg.setStorePathRootDir(args[1]);
            cfg.setStorePathCommitLog(args[1] + File.separator + "commitlog");
            cfg.setMappedFileSizeCommitLog(64 * 1024);
            cfg.setMappedFileSizeConsumeQueue(100 * 20);
            cfg.setMaxHashSlotNum(64);
            cfg.setMaxIndexNum(256);
            int n = Integer.parseInt(args[2]);
            DefaultMessageStore store = new DefaultMessageStore(cfg, new BrokerStatsManager("test", true), null, new BrokerConfig());
            if (!store.load()) throw new RuntimeException("load failed");
            store.start();
            for (int i = 0; i < n; i++) {
                MessageExtBrokerInner m = new MessageExtBrokerInner();
                m.setTopic("JavaTopic");
                m.setQueueId(i % 2);
                m.setBody(("java-body-" + i).getBytes("UTF-8"));
                m.setTags("TagJ");
                m.setKeys("jk" + i);
                m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(m.getTags()));
                m.setBornTimestamp(System.currentTimeMillis());
                m.setBornHost(new InetSocketAddress("127.0.0.1", 5000));
                m.setStoreHost(new InetSocketAddress("127.0.0.1", 10911));
                m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
                PutMessageResult r = store.putMessage(m);
                if (!r.isOk()) throw new RuntimeException("put failed: " + r);
            }
            Thread.sleep(500);
            store.shutdown();
            System.out.println("WROTE " + n);
            System.exit(0);
        } else { // decode <file with records>
            ByteBuffer bb = ByteBuffer.wrap(Files.readAllBytes(new File(args[1]).toPath()));
            for (MessageExt m : MessageDecoder.decodes(bb, true)) {
                System.out.println("MSG " + m.getTopic() + " " + m.getQueueId() + " " + m.getQueueOffset() + " "
                    + m.getCommitLogOffset() + " " + m.getMsgId() + " " + m.getTags() + " " + m.getKeys() + " "
                    + new String(m.getBody(), "UTF-8") + " crc=" + m.getBodyCRC());
            }
            System.exit(0);
        }
    }
}
`
