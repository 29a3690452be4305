package org.openrmq.e2ek8s;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
 * The official Java client (4.9.7) on the test cluster: sends COUNT messages with keys and
 * tags to TOPIC in batches of 100, then consumes them with a push consumer from the first
 * offset until it has every key. The name servers come from the address server named by
 * -Drocketmq.namesrv.domain (no namesrvAddr is set), as an application in the cluster
 * would find them. Prints "PRODUCED n in ms", "CONSUMED n in ms" and "E2E OK" or
 * "E2E FAIL ..."; exits 0 only on success.
 *
 * Usage: ProduceConsume TOPIC COUNT TIMEOUT_SECONDS
 */
public final class ProduceConsume {
    public static void main(String[] args) throws Exception {
        String topic = args[0];
        int count = Integer.parseInt(args[1]);
        long timeout = Long.parseLong(args[2]);
        String run = Long.toString(System.nanoTime(), 36);
        DefaultMQProducer producer = new DefaultMQProducer("e2e_java_producer");
        producer.setInstanceName("e2e_java_p_" + run);
        producer.setSendMsgTimeout(10000);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("e2e_java_consumer_" + run);
        consumer.setInstanceName("e2e_java_c_" + run);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeMessageBatchMaxSize(32);
        consumer.setPullBatchSize(64);
        int status = 1;
        try {
            producer.start();
            long t0 = System.currentTimeMillis();
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String tag = (i % 2 == 0) ? "TagA" : "TagB";
                batch.add(new Message(topic, tag, "java-" + run + "-" + i,
                        ("java message " + i).getBytes(StandardCharsets.UTF_8)));
                if (batch.size() == 100 || i == count - 1) {
                    SendResult r = producer.send(batch);
                    if (r.getSendStatus() != SendStatus.SEND_OK) {
                        System.out.println("E2E FAIL send: " + r);
                        return;
                    }
                    batch = new ArrayList<>();
                }
            }
            System.out.println("PRODUCED " + count + " in " + (System.currentTimeMillis() - t0) + " ms");

            Set<String> seen = ConcurrentHashMap.newKeySet();
            String prefix = "java-" + run + "-";
            long t1 = System.currentTimeMillis();
            consumer.subscribe(topic, "TagA || TagB");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    if (m.getKeys() != null && m.getKeys().startsWith(prefix)) {
                        seen.add(m.getKeys());
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            long deadline = System.currentTimeMillis() + TimeUnit.SECONDS.toMillis(timeout);
            while (seen.size() < count && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            System.out.println("CONSUMED " + seen.size() + " in " + (System.currentTimeMillis() - t1) + " ms");
            if (seen.size() == count) {
                System.out.println("E2E OK");
                status = 0;
            } else {
                System.out.println("E2E FAIL consumed " + seen.size() + " of " + count);
            }
        } finally {
            consumer.shutdown();
            producer.shutdown();
            System.exit(status);
        }
    }
}
