package org.openrmq.e2ek8s;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * The official Java client (4.9.7) as a steady producer beside the rolling-update
 * measurement's Go producer: sync sends of one small message at a time to TOPIC at RATE
 * messages per second, retries on, each with the key and body KEY_PREFIX-i. It stops when
 * stdin closes (the suite closes its end of a pipe), after SECONDS, or after RATE * SECONDS
 * messages, whichever comes first. The name servers come from -Drocketmq.namesrv.addr.
 *
 * Prints, one line per send, flushed: "ACK key STATUS unix_ms" for a send the broker
 * answered (unix_ms when the answer came), "FAIL key exception" for one the client gave up
 * on; then "DONE sent=n acked=n not_send_ok=n failed=n elapsed_ms=n". Exits 0 once done.
 *
 * Usage: SteadyProducer TOPIC KEY_PREFIX RATE SECONDS
 */
public final class SteadyProducer {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: SteadyProducer TOPIC KEY_PREFIX RATE SECONDS");
            System.exit(2);
        }
        String topic = args[0];
        String prefix = args[1];
        int rate = Integer.parseInt(args[2]);
        long seconds = Long.parseLong(args[3]);
        if (rate < 1 || seconds < 1) {
            System.err.println("SteadyProducer: RATE and SECONDS must be at least 1");
            System.exit(2);
        }
        long count = rate * seconds;
        long period = TimeUnit.SECONDS.toNanos(1) / rate;

        // stdin closing is the stop signal; reading it never blocks the sends.
        CountDownLatch stop = new CountDownLatch(1);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (IOException e) {
                // a broken stdin stops the producer as an orderly close does
            }
            stop.countDown();
        }, "stdin-watch");
        stdin.setDaemon(true);
        stdin.start();

        DefaultMQProducer producer = new DefaultMQProducer("e2e_roll_java_producer");
        producer.setInstanceName("e2e_roll_java_" + Long.toString(System.nanoTime(), 36));
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(2);
        producer.start();

        long sent = 0, acked = 0, notOK = 0, failed = 0;
        long t0 = System.nanoTime();
        long deadline = t0 + TimeUnit.SECONDS.toNanos(seconds);
        long next = t0;
        try {
            for (long i = 0; i < count && System.nanoTime() < deadline; i++) {
                // A fixed rate, without a burst to catch up after a send that stalled.
                long wait = next - System.nanoTime();
                if ((wait > 0 && stop.await(wait, TimeUnit.NANOSECONDS)) || stop.getCount() == 0) {
                    break;
                }
                next = Math.max(next + period, System.nanoTime());
                String key = prefix + "-" + i;
                Message m = new Message(topic, "", key, key.getBytes(StandardCharsets.UTF_8));
                sent++;
                try {
                    SendResult r = producer.send(m);
                    if (r.getSendStatus() == SendStatus.SEND_OK) {
                        acked++;
                    } else {
                        notOK++;
                    }
                    line("ACK " + key + " " + r.getSendStatus() + " " + System.currentTimeMillis());
                } catch (Exception e) {
                    failed++;
                    line("FAIL " + key + " " + e.getClass().getName() + ": "
                            + String.valueOf(e.getMessage()).replaceAll("\\s+", " "));
                }
            }
            line("DONE sent=" + sent + " acked=" + acked + " not_send_ok=" + notOK + " failed=" + failed
                    + " elapsed_ms=" + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        } finally {
            producer.shutdown();
        }
        System.exit(0);
    }

    private static void line(String s) {
        System.out.println(s);
        System.out.flush();
    }
}
