package org.openrmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Round trip with the official Java client (compatibility suite): sends COUNT messages to
 * TOPIC with DefaultMQProducer, then reads them back with DefaultMQPushConsumer, both routed
 * by the name server at NAMESRV. Prints one line per send and a final "ROUNDTRIP OK" or
 * "ROUNDTRIP FAIL ..." line; exits 0 only on success.
 *
 * Usage: RoundTrip NAMESRV TOPIC COUNT TIMEOUT_SECONDS
 */
public final class RoundTrip {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.out.println("usage: RoundTrip NAMESRV TOPIC COUNT TIMEOUT_SECONDS");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        long timeoutSeconds = Long.parseLong(args[3]);
        String suffix = Long.toString(System.nanoTime());
        int status = 1;

        DefaultMQProducer producer = new DefaultMQProducer("compat_java_producer_" + suffix);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("compat_java_producer_" + suffix);
        producer.setSendMsgTimeout(10000);
        producer.setRetryTimesWhenSendFailed(2);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("compat_java_consumer_" + suffix);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("compat_java_consumer_" + suffix);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        try {
            producer.start();
            Set<String> want = ConcurrentHashMap.newKeySet();
            for (int i = 0; i < count; i++) {
                String body = "java compat message " + i + " of " + topic;
                Message msg = new Message(topic, "compat", "key-" + i, body.getBytes(StandardCharsets.UTF_8));
                SendResult r = producer.send(msg);
                System.out.println("SENT " + i + " " + r.getSendStatus() + " " + r.getOffsetMsgId() + " " + r.getMessageQueue());
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    System.out.println("ROUNDTRIP FAIL send " + i + ": " + r);
                    return;
                }
                want.add(body);
            }

            CountDownLatch all = new CountDownLatch(1);
            Set<String> got = ConcurrentHashMap.newKeySet();
            consumer.subscribe(topic, "compat");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    if (want.contains(body)) {
                        got.add(body);
                    }
                }
                if (got.size() == want.size()) {
                    all.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            if (!all.await(timeoutSeconds, TimeUnit.SECONDS)) {
                System.out.println("ROUNDTRIP FAIL received " + got.size() + " of " + want.size() + " within " + timeoutSeconds + "s");
                return;
            }
            System.out.println("ROUNDTRIP OK sent=" + count + " received=" + got.size());
            status = 0;
        } catch (Throwable t) {
            System.out.println("ROUNDTRIP FAIL " + t);
            t.printStackTrace(System.out);
        } finally {
            consumer.shutdown();
            producer.shutdown();
            System.out.flush();
            System.exit(status);
        }
    }
}
