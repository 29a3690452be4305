package org.openrmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * The official Java client (4.9.x) against a broker under test (compatibility suite).
 * Every message carries a key PREFIX-key-I, tag PREFIX-tag (TAG), user properties and a body
 * that the consumer recomputes from I, so that a consumer can check each message field by field.
 *
 * Modes (all print a final "RESULT OK ..." or "RESULT FAIL ..." line; exit 0 only on OK):
 *
 *   send    NAMESRV TOPIC PREFIX COUNT            DefaultMQProducer.send one by one
 *   batch   NAMESRV TOPIC PREFIX COUNT            one DefaultMQProducer.send(Collection) (SEND_BATCH_MESSAGE)
 *   consume NAMESRV TOPIC PREFIX GROUP EXPECT SECONDS [FRESH]
 *           DefaultMQPushConsumer (clustering, CONSUME_FROM_FIRST_OFFSET, offsets persisted every
 *           second). EXPECT > 0: wait up to SECONDS for EXPECT distinct messages of PREFIX, check
 *           every field, linger 4s so that the offsets get committed, then shut down.
 *           EXPECT = 0 (a restarted group, which must resume from its committed offsets): send
 *           one fresh message FRESH (index) once the consumer started, wait up to SECONDS for it,
 *           then 2s more; fail if any other message of PREFIX arrives or the fresh one does not.
 *
 * The remoting serialization (JSON or ROCKETMQ binary headers) comes from the JVM
 * (-Drocketmq.serialize.type) and is printed as "SERIALIZE <type>"; the VIP channel from
 * -Dcom.rocketmq.sendMessageWithVIPChannel and printed as "VIP <bool>"; TLS from
 * -Dtls.enable (and the tls.client.* properties) and printed as "TLS <bool>".
 */
public final class BrokerClient {
    static final String TEXT = "héllo wörld 世界 a=b;c:d";
    static final int BIG_BODY = 6000; // > compressMsgBodyOverHowmuch (4096): sent compressed

    static String key(String prefix, int i) { return prefix + "-key-" + i; }
    static String tag(String prefix) { return prefix + "-tag"; }

    /** body of message i; a big one (compressed by the producer) when big. */
    static byte[] body(String prefix, int i, boolean big) {
        StringBuilder b = new StringBuilder("body " + i + " of " + prefix + " " + TEXT);
        if (big) {
            while (b.length() < BIG_BODY) {
                b.append(" padding-").append(b.length());
            }
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** message i of prefix; message 0 has a big body unless it goes into a batch (never compressed). */
    static Message message(String topic, String prefix, int i, boolean batch) {
        boolean big = i == 0 && !batch;
        Message m = new Message(topic, tag(prefix), key(prefix, i), body(prefix, i, big));
        if (big) {
            m.putUserProperty("compat_big", "true");
        }
        m.putUserProperty("compat_index", Integer.toString(i));
        m.putUserProperty("compat_text", TEXT);
        m.putUserProperty("compat_prefix", prefix);
        return m;
    }

    /** check returns "" when m is message i of prefix, else what differs. */
    static String check(MessageExt m, String topic, String prefix, int i) {
        List<String> bad = new ArrayList<>();
        if (!topic.equals(m.getTopic())) bad.add("topic " + m.getTopic());
        if (!tag(prefix).equals(m.getTags())) bad.add("tags " + m.getTags());
        if (!key(prefix, i).equals(m.getKeys())) bad.add("keys " + m.getKeys());
        if (!TEXT.equals(m.getUserProperty("compat_text"))) bad.add("compat_text " + m.getUserProperty("compat_text"));
        if (!prefix.equals(m.getUserProperty("compat_prefix"))) bad.add("compat_prefix " + m.getUserProperty("compat_prefix"));
        byte[] want = body(prefix, i, "true".equals(m.getUserProperty("compat_big")));
        if (!java.util.Arrays.equals(want, m.getBody())) {
            bad.add("body (" + (m.getBody() == null ? -1 : m.getBody().length) + " bytes, want " + want.length + ")");
        }
        if (m.getMsgId() == null || m.getMsgId().isEmpty()) bad.add("no msgId");
        if (m.getBornTimestamp() <= 0 || m.getStoreTimestamp() <= 0) bad.add("timestamps born=" + m.getBornTimestamp() + " store=" + m.getStoreTimestamp());
        return String.join(", ", bad);
    }

    public static void main(String[] args) {
        int status = 1;
        try {
            System.out.println("SERIALIZE " + RemotingCommand.createRequestCommand(0, null).getSerializeTypeCurrentRPC());
            System.out.println("TLS " + org.apache.rocketmq.remoting.netty.TlsSystemConfig.tlsEnable);
            status = run(args) ? 0 : 1;
        } catch (Throwable t) {
            System.out.println("RESULT FAIL " + t);
            t.printStackTrace(System.out);
        } finally {
            System.out.flush();
            System.exit(status);
        }
    }

    static DefaultMQProducer producer(String namesrv, String prefix) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("compat_producer_" + prefix);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName("compat_producer_" + prefix + "_" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setRetryTimesWhenSendFailed(0); // a failure must show, not be retried away
        System.out.println("VIP " + p.isVipChannelEnabled());
        p.start();
        return p;
    }

    /** channels lists the addresses the producer's remoting client has connections to. */
    static String channels(DefaultMQProducer p) {
        try {
            Object rc = p.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl().getRemotingClient();
            java.lang.reflect.Field f = rc.getClass().getDeclaredField("channelTables");
            f.setAccessible(true);
            return new java.util.TreeSet<>(((Map<?, ?>) f.get(rc)).keySet()).toString();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "unknown (" + e + ")";
        }
    }

    static boolean run(String[] a) throws Exception {
        switch (a.length > 0 ? a[0] : "") {
            case "send": {
                String namesrv = a[1], topic = a[2], prefix = a[3];
                int count = Integer.parseInt(a[4]);
                DefaultMQProducer p = producer(namesrv, prefix);
                try {
                    for (int i = 0; i < count; i++) {
                        SendResult r = p.send(message(topic, prefix, i, false));
                        System.out.println("SENT " + i + " " + r.getSendStatus() + " msgId=" + r.getMsgId() + " offsetMsgId=" + r.getOffsetMsgId()
                            + " queue=" + r.getMessageQueue().getQueueId() + " queueOffset=" + r.getQueueOffset() + " broker=" + r.getMessageQueue().getBrokerName());
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            System.out.println("RESULT FAIL send " + i + ": " + r);
                            return false;
                        }
                        if (r.getOffsetMsgId() == null || r.getOffsetMsgId().length() != 32) {
                            System.out.println("RESULT FAIL send " + i + ": offsetMsgId " + r.getOffsetMsgId() + " is not 32 hex digits: " + r);
                            return false;
                        }
                    }
                    System.out.println("CHANNELS " + channels(p));
                } finally {
                    p.shutdown();
                }
                System.out.println("RESULT OK sent=" + count);
                return true;
            }
            case "batch": {
                String namesrv = a[1], topic = a[2], prefix = a[3];
                int count = Integer.parseInt(a[4]);
                List<Message> msgs = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    msgs.add(message(topic, prefix, i, true));
                }
                DefaultMQProducer p = producer(namesrv, prefix);
                try {
                    SendResult r = p.send(msgs);
                    System.out.println("BATCH " + r.getSendStatus() + " msgId=" + r.getMsgId() + " offsetMsgId=" + r.getOffsetMsgId()
                        + " queue=" + r.getMessageQueue().getQueueId() + " queueOffset=" + r.getQueueOffset());
                    if (r.getSendStatus() != SendStatus.SEND_OK) {
                        System.out.println("RESULT FAIL batch: " + r);
                        return false;
                    }
                    String[] ids = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
                    String[] offIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
                    if (ids.length != count || offIds.length != count) {
                        System.out.println("RESULT FAIL batch of " + count + ": " + ids.length + " msgIds and " + offIds.length + " offsetMsgIds in " + r);
                        return false;
                    }
                } finally {
                    p.shutdown();
                }
                System.out.println("RESULT OK sent=" + count);
                return true;
            }
            case "consume":
                return consume(a[1], a[2], a[3], a[4], Integer.parseInt(a[5]), Integer.parseInt(a[6]), a.length > 7 ? Integer.parseInt(a[7]) : -1);
            default:
                System.out.println("RESULT FAIL usage: BrokerClient send|batch|consume ...");
                return false;
        }
    }

    // commitOffsets commits c's consumed offsets with acknowledged UPDATE_CONSUMER_OFFSET
    // requests. shutdown() commits them too, but oneway: System.exit can end the JVM before
    // Netty has written those frames, and the offsets checked afterwards would be a race.
    static void commitOffsets(DefaultMQPushConsumer c) throws Exception {
        OffsetStore store = c.getDefaultMQPushConsumerImpl().getOffsetStore();
        for (MessageQueue mq : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            long offset = store.readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
            if (offset >= 0) {
                store.updateConsumeOffsetToBroker(mq, offset, false);
            }
        }
    }

    static boolean consume(String namesrv, String topic, String prefix, String group, int expect, int seconds, int fresh) throws Exception {
        if (expect == 0 && fresh < 0) {
            System.out.println("RESULT FAIL consume with EXPECT 0 needs FRESH");
            return false;
        }
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(group + "_" + System.nanoTime());
        c.setMessageModel(MessageModel.CLUSTERING);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPersistConsumerOffsetInterval(1000);
        c.subscribe(topic, tag(prefix));
        Map<Integer, String> got = new ConcurrentHashMap<>();
        Map<String, String> bad = new ConcurrentHashMap<>();
        AtomicInteger deliveries = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(1);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                if (!prefix.equals(m.getUserProperty("compat_prefix")) && (m.getKeys() == null || !m.getKeys().startsWith(prefix + "-"))) {
                    continue;
                }
                deliveries.incrementAndGet();
                String idx = m.getUserProperty("compat_index");
                int i;
                try {
                    i = Integer.parseInt(idx);
                } catch (RuntimeException e) {
                    bad.put(m.getMsgId(), "compat_index " + idx + " in " + m);
                    continue;
                }
                String diff = check(m, topic, prefix, i);
                if (!diff.isEmpty()) {
                    bad.put(m.getMsgId(), "message " + i + ": " + diff + " in " + m);
                }
                got.put(i, "queue=" + m.getQueueId() + " queueOffset=" + m.getQueueOffset() + " reconsume=" + m.getReconsumeTimes());
                System.out.println("RECV " + i + " queue=" + m.getQueueId() + " queueOffset=" + m.getQueueOffset() + " msgId=" + m.getMsgId()
                    + " tags=" + m.getTags() + " keys=" + m.getKeys() + " bodyLen=" + m.getBody().length + " sysFlag=" + m.getSysFlag() + " reconsume=" + m.getReconsumeTimes());
            }
            if ((expect > 0 && got.size() >= expect) || (expect == 0 && got.containsKey(fresh))) {
                all.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            if (expect > 0) {
                if (!all.await(seconds, TimeUnit.SECONDS)) {
                    System.out.println("RESULT FAIL received " + got.size() + " of " + expect + " distinct messages within " + seconds + "s: "
                        + new TreeMap<>(got).keySet() + (bad.isEmpty() ? "" : "; bad: " + bad.values()));
                    return false;
                }
                Thread.sleep(4000); // offsets are persisted every second, and at shutdown
            } else {
                DefaultMQProducer p = producer(namesrv, prefix);
                try {
                    SendResult r = p.send(message(topic, prefix, fresh, false));
                    System.out.println("SENT " + fresh + " " + r.getSendStatus() + " (fresh) queue=" + r.getMessageQueue().getQueueId() + " queueOffset=" + r.getQueueOffset());
                } finally {
                    p.shutdown();
                }
                if (!all.await(seconds, TimeUnit.SECONDS)) {
                    System.out.println("RESULT FAIL the restarted group " + group + " did not receive the fresh message " + fresh + " within " + seconds + "s; got " + new TreeMap<>(got));
                    return false;
                }
                Thread.sleep(2000); // old messages, if redelivered, would come by now
            }
            commitOffsets(c);
        } finally {
            c.shutdown();
        }
        if (!bad.isEmpty()) {
            System.out.println("RESULT FAIL " + bad.size() + " messages differ from what was sent: " + bad.values());
            return false;
        }
        if (expect == 0 && (got.size() != 1 || !got.containsKey(fresh))) {
            Map<Integer, String> old = new TreeMap<>(got);
            old.remove(fresh);
            System.out.println("RESULT FAIL group " + group + " re-received " + old.size() + " already consumed messages after a restart (offsets not committed or not served?): " + old);
            return false;
        }
        System.out.println("RESULT OK received=" + got.size() + " deliveries=" + deliveries.get());
        return true;
    }
}
