package org.openrmq.bench;

import java.lang.management.ManagementFactory;
import java.net.SocketAddress;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.exception.RemotingException;

/**
 * Load generator on the official Java client (the rocketmq-client jar of the compat suite's
 * pom.xml, 4.9.7), the counterpart of bin/rmqbench for hack/bench-vs-java.sh
 * (BENCH_CLIENT=java), so that a result does not rest on our own Go client alone. It takes
 * rmqbench's flags where they apply:
 *
 * <pre>
 *   JavaBench producer -n NAMESRV -t TOPIC -d 20s [-w 16] [-s 1024] [-c -q 8] [-warmup 3s] [-count 0]
 *                      [-g benchmark_producer] [-i 5s] [-timeout 3s] [-retries 2]
 *   JavaBench consumer -n NAMESRV -t TOPIC -g GROUP -d 300s [-from-first] [-count 0] [-warmup 3s]
 *                      [-w 20] [-b 32] [-i 5s] [-pull-retry-delay 100ms]
 * </pre>
 *
 * producer: -w threads calling DefaultMQProducer.send (sync) on one shared producer
 * instance, as RocketMQ's benchmark Producer (org.apache.rocketmq.example.benchmark) does:
 * one MQClientInstance, one connection per broker, like rmqbench's shared client. Bodies are
 * -s random letters, no keys or tags, never compressed. Send timeout and retries are the
 * client's defaults (3 s, 2 retries) unless given. -c creates the topic with -q queues on
 * every master first (through the TBW102 route, DefaultMQProducer.createTopic) and waits for
 * the name server to route them. -warmup sends for that long first, same producer, same
 * threads, then drops those figures: the JIT warms in this JVM before it is measured.
 *
 * consumer: a DefaultMQPushConsumer in group -g subscribed to "*" (CONSUME_FROM_FIRST_OFFSET
 * with -from-first, else CONSUME_FROM_LAST_OFFSET), -w consume threads, -b messages per pull,
 * a failed pull tried again after -pull-retry-delay (rmqbench's 100 ms; the client's default
 * is 1 s, and right after a rebalance the first pulls can race the heartbeat that carries
 * the new subscription version and fail SUBSCRIPTION_NOT_LATEST, on any broker), client
 * defaults otherwise (one pull in flight per queue, 1 message per listener call),
 * until it has -count distinct messages (by queue and queue offset; redeliveries are counted
 * as duplicates) or -d elapsed. -warmup first drains the topic for that long (or until
 * -count) in a throwaway group, GROUP_jit, then shuts that consumer down.
 *
 * Output: every -i a line like the benchmark's ("Send TPS: ... Max RT(ms): ... Average
 * RT(ms): ... Send Failed: ... Response Failed: ...", "Consume TPS: ... AVG(B2C) RT(ms):
 * ..."), the interval's TPS and maximum; "MEASURING" when the measured part starts (after
 * the warm-up; the script samples the broker's CPU from there); at the end a summary and
 * one machine-readable line per series with rmqbench's fields (see cmd/rmqbench printResults):
 *
 * <pre>
 *   RESULT client=java mode=producer series=send messages=N seconds=S tps=T mib_s=M avg_ms=... p50_ms=...
 *       p99_ms=... p999_ms=... max_ms=... errors=E send_failed=.. response_failed=.. busy=.. not_confirmed=..
 *       warmup_messages=W client_cpu_s=C
 *   RESULT client=java mode=consumer series=S2C messages=N ... errors=F pull_failed=F duplicates=D client_cpu_s=C
 * </pre>
 *
 * Send latency is System.nanoTime around send() (retries included), kept in the same
 * histogram as rmqbench (exact below 128 us, then under 1.6 % error); the benchmark
 * Producer's own average and maximum are whole milliseconds. TPS is the run's count over its
 * duration (rmqbench's), not the benchmark's last-10-seconds window; for the consumer, over
 * the span from the first to the last message received. B2C/S2C latencies are from the
 * messages' millisecond born and store timestamps. client_cpu_s is this JVM's process CPU
 * time (OperatingSystemMXBean.getProcessCpuTime: every thread, JIT and GC included) over the
 * measured part. Errors: a RemotingException or MQClientException is "send failed", a
 * broker's error answer (MQBrokerException, also when it comes wrapped after the retries)
 * "response failed", of those SYSTEM_BUSY "busy"; after either the thread pauses 10 ms
 * (rmqbench's pause; the benchmark's is 3 s). A send answered with a status other than
 * SEND_OK (FLUSH_DISK_TIMEOUT, ...) counts as sent and as not_confirmed. The push consumer
 * retries failed pulls inside the client without telling the application: the consumer's
 * errors are the failed pulls its log shows within the measured part (PullFailures; "-" if
 * the log cannot be read). Every loop ends by -d (and -count when given); exit status 0
 * unless setup failed.
 */
public final class JavaBench {
    private static final int SYSTEM_BUSY = 2; // RemotingSysResponseCode.SYSTEM_BUSY
    private static final long PAUSE_AFTER_ERROR_MS = 10;
    private static final DateTimeFormatter CLOCK = DateTimeFormatter.ofPattern("HH:mm:ss");

    public static void main(String[] args) {
        Locale.setDefault(Locale.ROOT);
        int status;
        try {
            if (args.length < 1) {
                throw new IllegalArgumentException("no mode");
            }
            Options o = Options.parse(args[0], java.util.Arrays.copyOfRange(args, 1, args.length));
            status = "producer".equals(o.mode) ? produce(o) : consume(o);
        } catch (IllegalArgumentException e) {
            System.err.println("JavaBench: " + e.getMessage());
            System.err.println("usage: JavaBench producer -n NAMESRV -t TOPIC -d DURATION [-w N] [-s BYTES] [-c -q N] [-warmup D] [-count N]");
            System.err.println("       JavaBench consumer -n NAMESRV -t TOPIC -g GROUP -d TIMEOUT [-from-first] [-count N] [-warmup D] [-w N] [-b N] [-pull-retry-delay D]");
            status = 2;
        } catch (Throwable t) {
            System.out.println("JavaBench: " + t);
            t.printStackTrace(System.out);
            status = 1;
        }
        System.out.flush();
        System.exit(status); // the client's threads are not all daemons
    }

    // --- producer --------------------------------------------------------------------------

    private static int produce(Options o) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(o.group);
        producer.setNamesrvAddr(o.namesrv);
        producer.setInstanceName("javabench_producer_" + ProcessHandle.current().pid() + "_" + System.nanoTime());
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        if (o.timeoutMs > 0) {
            producer.setSendMsgTimeout((int) o.timeoutMs);
        }
        if (o.retries >= 0) {
            producer.setRetryTimesWhenSendFailed(o.retries);
        }
        producer.start();
        try {
            if (o.create) {
                createTopic(producer, o);
            }
            byte[] body = new byte[o.size];
            Random rnd = new Random();
            for (int i = 0; i < body.length; i++) {
                body[i] = (byte) ('a' + rnd.nextInt(26));
            }
            System.out.printf("producer: topic %s, %d threads, sync, body %d B, one shared DefaultMQProducer, send timeout %d ms, retries %d%n",
                o.topic, o.threads, o.size, producer.getSendMsgTimeout(), producer.getRetryTimesWhenSendFailed());

            Reporter reporter = new Reporter(o.intervalMs);
            long warmupMessages = 0;
            if (o.warmupMs > 0) {
                ProducerStats w = new ProducerStats();
                reporter.watchProducer("warm-up", w);
                long t0 = System.nanoTime();
                sendPhase(producer, o, body, w, o.warmupMs, 0);
                warmupMessages = w.rt.count();
                System.out.printf("warm-up: %d messages in %.1f s (not measured)%n", warmupMessages, (System.nanoTime() - t0) / 1e9);
            }
            ProducerStats st = new ProducerStats();
            reporter.watchProducer("", st);
            System.out.println("MEASURING");
            System.out.flush();
            long cpu0 = processCpuNanos();
            long t0 = System.nanoTime();
            sendPhase(producer, o, body, st, o.durationMs, o.count);
            long elapsed = System.nanoTime() - t0;
            long cpu1 = processCpuNanos();
            reporter.stop();

            long sent = st.rt.count();
            long sendFailed = st.sendFailed.sum(), respFailed = st.respFailed.sum();
            // The benchmark Producer's closing line, then rmqbench's summary with percentiles.
            System.out.printf("[Complete] Send Total: %d Send TPS: %d Max RT(ms): %.3f Average RT(ms): %7.3f Send Failed: %d Response Failed: %d%n",
                sent + sendFailed + respFailed, (long) (sent / (elapsed / 1e9)), st.rt.maxMs(), st.rt.avgMs(), sendFailed, respFailed);
            Series s = new Series("send", sent, sent * o.size, elapsed, st.rt);
            printSummary("Producer summary (sync, RT = send() call to its return)", List.of(s));
            System.out.printf("send failed: %d, response failed: %d, stored but not confirmed (flush/slave timeout): %d, refused SYSTEM_BUSY: %d%n",
                sendFailed, respFailed, st.notConfirmed.sum(), st.busy.sum());
            System.out.printf("client CPU (JVM process CPU time while sending): %s s%n", cpuText(cpu0, cpu1));
            printResult("producer", s, String.format(Locale.ROOT,
                "errors=%d send_failed=%d response_failed=%d busy=%d not_confirmed=%d warmup_messages=%d client_cpu_s=%s",
                sendFailed + respFailed, sendFailed, respFailed, st.busy.sum(), st.notConfirmed.sum(), warmupMessages, cpuText(cpu0, cpu1)));
            return 0;
        } finally {
            producer.shutdown();
        }
    }

    /** Runs o.threads sending threads for durationMs, or until count messages were attempted. */
    private static void sendPhase(DefaultMQProducer producer, Options o, byte[] body, ProducerStats st, long durationMs, long count)
        throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(durationMs);
        final AtomicLong issued = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < o.threads; t++) {
            Thread th = new Thread(() -> {
                while (System.nanoTime() < deadline && (count <= 0 || issued.incrementAndGet() <= count)) {
                    Message msg = new Message(o.topic, body);
                    long start = System.nanoTime();
                    try {
                        SendResult r = producer.send(msg);
                        st.rt.add((System.nanoTime() - start) / 1000);
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            st.notConfirmed.increment();
                        }
                        continue;
                    } catch (MQBrokerException e) {
                        st.responseFailed(e.getResponseCode());
                    } catch (MQClientException e) {
                        if (e.getCause() instanceof MQBrokerException) {
                            st.responseFailed(((MQBrokerException) e.getCause()).getResponseCode());
                        } else {
                            st.sendFailed.increment();
                        }
                    } catch (RemotingException e) {
                        st.sendFailed.increment();
                    } catch (InterruptedException e) {
                        return;
                    }
                    long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (left > 0) {
                        try {
                            Thread.sleep(Math.min(PAUSE_AFTER_ERROR_MS, left)); // do not spin on a dead broker
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            }, "javabench-send-" + t);
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
    }

    /** Creates o.topic with o.queues queues on every master and waits until it is routed; up to 60 s. */
    @SuppressWarnings("deprecation") // DefaultMQProducer.createTopic: deprecated in 4.9.x, still what it offers
    private static void createTopic(DefaultMQProducer producer, Options o) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Exception last = null;
        boolean created = false;
        while (System.nanoTime() < deadline) {
            try {
                if (!created) {
                    producer.createTopic(producer.getCreateTopicKey(), o.topic, o.queues);
                    created = true;
                }
                int n = producer.fetchPublishMessageQueues(o.topic).size();
                if (n >= o.queues) {
                    System.out.printf("topic %s created with %d queues per master; route has %d write queues%n", o.topic, o.queues, n);
                    return;
                }
                last = new IllegalStateException("route has " + n + " write queues");
            } catch (MQClientException e) {
                last = e; // the broker's first registration may not have reached the name server yet
            }
            Thread.sleep(500);
        }
        throw new IllegalStateException("topic " + o.topic + " not created and routed within 60 s", last);
    }

    // --- consumer --------------------------------------------------------------------------

    private static int consume(Options o) throws Exception {
        Reporter reporter = new Reporter(o.intervalMs);
        if (o.warmupMs > 0) {
            ConsumerStats w = new ConsumerStats();
            reporter.watchConsumer("warm-up", w);
            long t0 = System.nanoTime();
            drain(o, o.group + "_jit", w, o.warmupMs).shutdown();
            System.out.printf("warm-up: %d messages in %.1f s in group %s_jit (not measured)%n", w.unique.sum(),
                (System.nanoTime() - t0) / 1e9, o.group);
        }
        ConsumerStats st = new ConsumerStats();
        reporter.watchConsumer("", st);
        System.out.println("MEASURING");
        System.out.flush();
        long cpu0 = processCpuNanos();
        long wall0 = System.currentTimeMillis();
        long t0 = System.nanoTime();
        DefaultMQPushConsumer consumer = drain(o, o.group, st, o.durationMs);
        long elapsed = System.nanoTime() - t0;
        long cpu1 = processCpuNanos();
        long wall1 = System.currentTimeMillis();
        reporter.stop();
        consumer.shutdown(); // stores the offsets, unregisters
        Map<String, Long> pullFailures = PullFailures.between(wall0, wall1);

        long got = st.unique.sum();
        long span = st.last.get() - st.first.get();
        if (got == 0 || span <= 0) {
            span = elapsed;
        }
        List<Series> rows = List.of(
            new Series("B2C", got, st.bytes.sum(), span, st.b2c),
            new Series("S2C", got, st.bytes.sum(), span, st.s2c));
        printSummary("Consumer summary (B2C = born timestamp to received, S2C = store timestamp to received; ms clock)", rows);
        System.out.printf("ran %.1f s, messages flowed for %.1f s (the duration column); duplicates: %d; %s%n", elapsed / 1e9, span / 1e9,
            st.duplicates.sum(), o.count > 0 && got < o.count ? "got " + got + " of " + o.count + " messages" : "done");
        String failed = "-";
        if (pullFailures != null) {
            long n = pullFailures.values().stream().mapToLong(Long::longValue).sum();
            failed = Long.toString(n);
            System.out.printf("pull failed (from the client's log, %s): %d%n", PullFailures.path(), n);
            pullFailures.forEach((what, k) -> System.out.printf("  %d x %s%n", k, what));
        }
        System.out.printf("client CPU (JVM process CPU time while consuming): %s s%n", cpuText(cpu0, cpu1));
        for (Series s : rows) {
            printResult("consumer", s, String.format(Locale.ROOT, "errors=%s pull_failed=%s duplicates=%d client_cpu_s=%s", failed, failed,
                st.duplicates.sum(), cpuText(cpu0, cpu1)));
        }
        return 0;
    }

    /**
     * Starts a push consumer in group and returns it, still running, once st has o.count
     * distinct messages or timeoutMs passed; the caller shuts it down.
     */
    @SuppressWarnings("deprecation") // getDefaultMQPushConsumerImpl: the only way to the impl's copy of the delay
    private static DefaultMQPushConsumer drain(Options o, String group, ConsumerStats st, long timeoutMs) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(o.namesrv);
        consumer.setInstanceName("javabench_" + group + "_" + ProcessHandle.current().pid() + "_" + System.nanoTime());
        consumer.setConsumeFromWhere(o.fromFirst ? ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET : ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        consumer.setConsumeThreadMin(o.threads);
        consumer.setConsumeThreadMax(o.threads);
        consumer.setPullBatchSize(o.batch);
        // The delay before a failed pull is tried again: the impl copies it when constructed.
        consumer.setPullTimeDelayMillsWhenException(o.pullRetryDelayMs);
        consumer.getDefaultMQPushConsumerImpl().setPullTimeDelayMillsWhenException(o.pullRetryDelayMs);
        consumer.subscribe(o.topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            long at = System.nanoTime();
            st.first.compareAndSet(0, at);
            st.last.accumulateAndGet(at, Math::max);
            for (MessageExt m : msgs) {
                if (!st.firstTime(m)) {
                    st.duplicates.increment();
                    continue;
                }
                st.b2c.add((now - m.getBornTimestamp()) * 1000);
                st.s2c.add((now - m.getStoreTimestamp()) * 1000);
                st.bytes.add(m.getBody() == null ? 0 : m.getBody().length);
                st.unique.increment();
            }
            if (o.count > 0 && st.unique.sum() >= o.count) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        System.out.printf("consumer: topic %s, group %s, %s, %d consume threads, %d per pull, failed pulls retried after %d ms%n", o.topic,
            group, o.fromFirst ? "CONSUME_FROM_FIRST_OFFSET" : "CONSUME_FROM_LAST_OFFSET", o.threads, o.batch, o.pullRetryDelayMs);
        try {
            done.await(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            consumer.shutdown();
            throw e;
        }
        return consumer;
    }

    // --- statistics --------------------------------------------------------------------------

    /** Latencies in microseconds: count, sum, run and interval maxima and rmqbench's histogram. */
    static final class Latency {
        // Exact below 128 us, then 64 buckets per power of two, up to about 2^40 us (cmd/rmqbench/stats.go).
        private final AtomicLongArray counts = new AtomicLongArray(128 + 34 * 64);
        private final LongAdder n = new LongAdder();
        private final LongAdder sum = new LongAdder();
        private final AtomicLong max = new AtomicLong();
        private final AtomicLong intervalMax = new AtomicLong();

        void add(long us) {
            if (us < 0) {
                us = 0;
            }
            n.increment();
            sum.add(us);
            counts.incrementAndGet(bucketOf(us, counts.length()));
            max.accumulateAndGet(us, Math::max);
            intervalMax.accumulateAndGet(us, Math::max);
        }

        long count() {
            return n.sum();
        }

        double avgMs() {
            long c = n.sum();
            return c == 0 ? 0 : sum.sum() / (double) c / 1000;
        }

        double maxMs() {
            return max.get() / 1000.0;
        }

        double takeIntervalMaxMs() {
            return intervalMax.getAndSet(0) / 1000.0;
        }

        /** The q-quantile (0..1) in ms, 0 when empty. */
        double quantileMs(double q) {
            long total = 0;
            for (int i = 0; i < counts.length(); i++) {
                total += counts.get(i);
            }
            if (total == 0) {
                return 0;
            }
            long rank = (long) (q * (total - 1)) + 1;
            long seen = 0;
            for (int i = 0; i < counts.length(); i++) {
                seen += counts.get(i);
                if (seen >= rank) {
                    return bucketValue(i) / 1000;
                }
            }
            return bucketValue(counts.length() - 1) / 1000;
        }

        static int bucketOf(long us, int len) {
            if (us < 128) {
                return (int) us;
            }
            int shift = (64 - Long.numberOfLeadingZeros(us)) - 7; // us >> shift is in [64, 127]
            int i = 128 + (shift - 1) * 64 + (int) (us >> shift) - 64;
            return Math.min(i, len - 1);
        }

        /** The midpoint of bucket i in us. */
        static double bucketValue(int i) {
            if (i < 128) {
                return i;
            }
            int shift = (i - 128) / 64 + 1;
            long lo = (long) ((i - 128) % 64 + 64) << shift;
            return lo + (double) (1L << shift) / 2;
        }
    }

    static final class ProducerStats {
        final Latency rt = new Latency();
        final LongAdder sendFailed = new LongAdder(); // no answer: connection error, timeout, no route
        final LongAdder respFailed = new LongAdder(); // the broker answered with an error code
        final LongAdder busy = new LongAdder(); // of those, SYSTEM_BUSY (flow control)
        final LongAdder notConfirmed = new LongAdder(); // stored, status other than SEND_OK

        void responseFailed(int code) {
            respFailed.increment();
            if (code == SYSTEM_BUSY) {
                busy.increment();
            }
        }
    }

    static final class ConsumerStats {
        final Latency b2c = new Latency();
        final Latency s2c = new Latency();
        final LongAdder unique = new LongAdder();
        final LongAdder duplicates = new LongAdder();
        final LongAdder bytes = new LongAdder();
        final AtomicLong first = new AtomicLong(); // System.nanoTime of the first and last receipt
        final AtomicLong last = new AtomicLong();
        private final Map<Long, BitSet> seen = new ConcurrentHashMap<>();

        /** Marks m's queue offset as received; false if it was already. */
        boolean firstTime(MessageExt m) {
            SocketAddress store = m.getStoreHost();
            long key = ((long) (store == null ? 0 : store.hashCode()) << 32) | (m.getQueueId() & 0xffffffffL);
            BitSet bits = seen.computeIfAbsent(key, k -> new BitSet());
            long off = m.getQueueOffset();
            if (off < 0 || off > Integer.MAX_VALUE) {
                return true; // not trackable in a BitSet; counted as new
            }
            synchronized (bits) {
                if (bits.get((int) off)) {
                    return false;
                }
                bits.set((int) off);
                return true;
            }
        }
    }

    /**
     * The push consumer's failed pulls. The 4.9.7 client retries them itself and tells the
     * application nothing (RPC hooks do not see asynchronous responses); it only logs each as
     * "execute the pull request exception" followed by the exception. This reads its log
     * (rocketmq.client.logRoot, rocketmq_client.log) and counts those stamped within a window,
     * by the exception's first line without the broker address or request dump.
     */
    static final class PullFailures {
        private static final String MARK = "execute the pull request exception";
        private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss,SSS");

        static java.nio.file.Path path() {
            String root = System.getProperty("rocketmq.client.logRoot", System.getProperty("user.home") + "/logs/rocketmqlogs");
            return java.nio.file.Paths.get(root, System.getProperty("rocketmq.client.logFileName", "rocketmq_client.log"));
        }

        /** Counts by kind, or null when the log cannot be read. */
        static Map<String, Long> between(long fromMillis, long toMillis) {
            try {
                Thread.sleep(200); // the client's log appender is asynchronous
                List<String> lines = java.nio.file.Files.readAllLines(path(), java.nio.charset.StandardCharsets.UTF_8);
                return count(lines, fromMillis, toMillis);
            } catch (Exception e) {
                System.out.println("cannot count failed pulls: " + e);
                return null;
            }
        }

        static Map<String, Long> count(List<String> lines, long fromMillis, long toMillis) {
            Map<String, Long> out = new java.util.TreeMap<>();
            for (int i = 0; i < lines.size(); i++) {
                String l = lines.get(i);
                if (!l.contains(MARK) || l.length() < 23) {
                    continue;
                }
                long at;
                try {
                    at = java.time.LocalDateTime.parse(l.substring(0, 23), STAMP).atZone(java.time.ZoneId.systemDefault())
                        .toInstant().toEpochMilli();
                } catch (java.time.format.DateTimeParseException e) {
                    continue;
                }
                if (at < fromMillis || at > toMillis) {
                    continue;
                }
                String what = i + 1 < lines.size() ? lines.get(i + 1).trim() : "?";
                for (String cut : new String[] {" BROKER:", ". Request:"}) { // no addresses or request dumps
                    int b = what.indexOf(cut);
                    if (b > 0) {
                        what = what.substring(0, b);
                    }
                }
                what = what.replaceAll("\\s+", " ");
                out.merge(what.length() > 160 ? what.substring(0, 160) : what, 1L, Long::sum);
            }
            return out;
        }
    }

    /** The interval lines, every intervalMs, for the phase being watched. */
    static final class Reporter {
        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "javabench-report");
            t.setDaemon(true);
            return t;
        });
        private Runnable line = () -> { };

        Reporter(long intervalMs) {
            if (intervalMs > 0) {
                timer.scheduleAtFixedRate(() -> {
                    Runnable r;
                    synchronized (this) {
                        r = line;
                    }
                    r.run();
                }, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
            }
        }

        synchronized void watchProducer(String label, ProducerStats st) {
            long[] prev = {System.nanoTime(), 0, 0};
            String prefix = label.isEmpty() ? "" : label + " ";
            line = () -> {
                long now = System.nanoTime(), n = st.rt.count(), sum = st.rt.sum.sum();
                double dt = (now - prev[0]) / 1e9;
                long dn = n - prev[1];
                System.out.printf("%s%s | Send TPS: %d | Max RT(ms): %.3f | Average RT(ms): %7.3f | Send Failed: %d | Response Failed: %d%n",
                    prefix, LocalTime.now().format(CLOCK), (long) (dn / dt), st.rt.takeIntervalMaxMs(),
                    dn > 0 ? (sum - prev[2]) / (double) dn / 1000 : 0.0, st.sendFailed.sum(), st.respFailed.sum());
                prev[0] = now;
                prev[1] = n;
                prev[2] = sum;
            };
        }

        synchronized void watchConsumer(String label, ConsumerStats st) {
            long[] prev = {System.nanoTime(), 0, 0, 0};
            String prefix = label.isEmpty() ? "" : label + " ";
            line = () -> {
                long now = System.nanoTime(), n = st.b2c.count(), sb = st.b2c.sum.sum(), ss = st.s2c.sum.sum();
                double dt = (now - prev[0]) / 1e9;
                long dn = n - prev[1];
                System.out.printf("%s%s | Consume TPS: %d | AVG(B2C) RT(ms): %7.3f | AVG(S2C) RT(ms): %7.3f | MAX(B2C) RT(ms): %.3f | MAX(S2C) RT(ms): %.3f | Duplicates: %d%n",
                    prefix, LocalTime.now().format(CLOCK), (long) (dn / dt),
                    dn > 0 ? (sb - prev[2]) / (double) dn / 1000 : 0.0, dn > 0 ? (ss - prev[3]) / (double) dn / 1000 : 0.0,
                    st.b2c.takeIntervalMaxMs(), st.s2c.takeIntervalMaxMs(), st.duplicates.sum());
                prev[0] = now;
                prev[1] = n;
                prev[2] = sb;
                prev[3] = ss;
            };
        }

        void stop() {
            timer.shutdownNow();
        }
    }

    // --- output ------------------------------------------------------------------------------

    /** One summary row: a latency series over a duration (ns). */
    static final class Series {
        final String name;
        final long count, bytes, nanos;
        final Latency lat;

        Series(String name, long count, long bytes, long nanos, Latency lat) {
            this.name = name;
            this.count = count;
            this.bytes = bytes;
            this.nanos = nanos;
            this.lat = lat;
        }

        double secs() {
            return nanos / 1e9;
        }

        double tps() {
            return nanos > 0 ? count / secs() : 0;
        }

        double mibs() {
            return nanos > 0 ? bytes / secs() / (1 << 20) : 0;
        }
    }

    private static void printSummary(String title, List<Series> rows) {
        System.out.printf("%n%s%n", title);
        System.out.printf("%6s  %11s  %9s  %7s  %6s  %8s  %8s  %8s  %9s  %8s%n",
            "series", "duration(s)", "total", "TPS", "MiB/s", "avg(ms)", "p50(ms)", "p99(ms)", "p99.9(ms)", "max(ms)");
        for (Series s : rows) {
            System.out.printf(Locale.ROOT, "%6s  %11.1f  %9d  %7.0f  %6.1f  %8.3f  %8.3f  %8.3f  %9.3f  %8.3f%n", s.name, s.secs(), s.count,
                s.tps(), s.mibs(), s.lat.avgMs(), s.lat.quantileMs(0.5), s.lat.quantileMs(0.99), s.lat.quantileMs(0.999), s.lat.maxMs());
        }
    }

    private static void printResult(String mode, Series s, String tail) {
        System.out.printf(Locale.ROOT,
            "RESULT client=java mode=%s series=%s messages=%d seconds=%.3f tps=%.0f mib_s=%.1f avg_ms=%.3f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f %s%n",
            mode, s.name, s.count, s.secs(), s.tps(), s.mibs(), s.lat.avgMs(), s.lat.quantileMs(0.5), s.lat.quantileMs(0.99),
            s.lat.quantileMs(0.999), s.lat.maxMs(), tail);
    }

    /** This JVM's CPU time (all threads) in ns, or -1 where the JVM does not report it. */
    private static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return -1;
    }

    private static String cpuText(long cpu0, long cpu1) {
        return cpu0 < 0 || cpu1 < 0 ? "-" : String.format(Locale.ROOT, "%.2f", (cpu1 - cpu0) / 1e9);
    }

    // --- flags -------------------------------------------------------------------------------

    static final class Options {
        String mode;
        String namesrv;
        String topic = "BenchmarkTest";
        String group;
        int threads;
        int size = 1024;
        int queues = 8;
        int batch = 32;
        int retries = -1; // the client's default
        boolean create;
        boolean fromFirst;
        long durationMs;
        long warmupMs;
        long intervalMs = 5000;
        long timeoutMs; // 0: the client's default
        long pullRetryDelayMs = 100; // the client's default is 1 s; rmqbench waits 100 ms
        long count;

        static Options parse(String mode, String[] args) {
            Options o = new Options();
            o.mode = mode;
            boolean producer = "producer".equals(mode);
            if (!producer && !"consumer".equals(mode)) {
                throw new IllegalArgumentException("unknown mode " + mode + " (want producer or consumer)");
            }
            o.group = producer ? "benchmark_producer" : "benchmark_consumer";
            o.threads = producer ? 16 : 20;
            o.namesrv = System.getenv().getOrDefault("NAMESRV_ADDR", "127.0.0.1:9876");
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("-c") && producer) {
                    o.create = true;
                    continue;
                }
                if (a.equals("-from-first") && !producer) {
                    o.fromFirst = true;
                    continue;
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("flag " + a + " needs a value (or is unknown)");
                }
                String v = args[++i];
                switch (a) {
                    case "-n": o.namesrv = v; break;
                    case "-t": o.topic = v; break;
                    case "-g": o.group = v; break;
                    case "-w": o.threads = positive(a, v); break;
                    case "-d": o.durationMs = millis(a, v); break;
                    case "-warmup": o.warmupMs = millis(a, v); break;
                    case "-i": o.intervalMs = millis(a, v); break;
                    case "-count": o.count = Long.parseLong(v); break;
                    default:
                        if (producer && a.equals("-s")) {
                            o.size = positive(a, v);
                        } else if (producer && a.equals("-q")) {
                            o.queues = positive(a, v);
                        } else if (producer && a.equals("-timeout")) {
                            o.timeoutMs = millis(a, v);
                        } else if (producer && a.equals("-retries")) {
                            o.retries = Integer.parseInt(v);
                        } else if (!producer && a.equals("-b")) {
                            o.batch = positive(a, v);
                        } else if (!producer && a.equals("-pull-retry-delay")) {
                            o.pullRetryDelayMs = millis(a, v);
                        } else {
                            throw new IllegalArgumentException("unknown flag " + a + " for " + mode);
                        }
                }
            }
            if (o.durationMs <= 0) {
                throw new IllegalArgumentException("-d must be a positive duration: every run is bounded in time");
            }
            return o;
        }

        static int positive(String flag, String v) {
            int n = Integer.parseInt(v);
            if (n < 1) {
                throw new IllegalArgumentException(flag + " must be positive");
            }
            return n;
        }

        /** A Go-style duration: 300ms, 20s, 5m, 1h, or plain seconds. */
        static long millis(String flag, String v) {
            String[][] units = {{"ms", "1"}, {"s", "1000"}, {"m", "60000"}, {"h", "3600000"}};
            for (String[] u : units) {
                if (v.endsWith(u[0]) && !(u[0].equals("s") && v.endsWith("ms"))) {
                    String num = v.substring(0, v.length() - u[0].length());
                    try {
                        return (long) (Double.parseDouble(num) * Long.parseLong(u[1]));
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(flag + ": bad duration " + v);
                    }
                }
            }
            try {
                return (long) (Double.parseDouble(v) * 1000);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(flag + ": bad duration " + v);
            }
        }
    }
}
