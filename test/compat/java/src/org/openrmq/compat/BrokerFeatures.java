package org.openrmq.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * More of the official Java client against a broker under test, one feature per mode, each a
 * producer and a push consumer in one JVM. Messages are BrokerClient's (checked field by
 * field). Prints "RESULT OK ..." or "RESULT FAIL ..."; exits 0 only on OK.
 *
 *   retry   NAMESRV TOPIC PREFIX GROUP    1 message; the listener answers RECONSUME_LATER once
 *                                         (CONSUMER_SEND_MSG_BACK), then gets it again from the
 *                                         retry topic with reconsumeTimes 1
 *   orderly NAMESRV TOPIC PREFIX GROUP N  N messages to queues by i % 2 (MessageQueueSelector);
 *                                         MessageListenerOrderly (LOCK_BATCH_MQ) must see each
 *                                         queue in send order
 *   delay   NAMESRV TOPIC PREFIX GROUP    1 message with delayTimeLevel 2 (schedule topic)
 *   async   NAMESRV TOPIC PREFIX GROUP N  N async sends and N oneway sends, all consumed
 *   sql     NAMESRV TOPIC PREFIX GROUP N  N messages, a SQL92 subscription compat_index >= 2
 *                                         must get exactly 2..N-1
 *   bulk    NAMESRV TOPIC PREFIX GROUP N  N messages of 200 KB of random bytes (more than the broker's
 *                                         commit log segments hold), all consumed intact
 *   txn     NAMESRV TOPIC PREFIX GROUP    TransactionMQProducer: half message 0 committed, 1 rolled
 *                                         back, 2 left UNKNOW and committed when the broker checks
 *                                         back (CHECK_TRANSACTION_STATE 39); the consumer must get
 *                                         exactly 0 and 2
 *   lite    NAMESRV TOPIC PREFIX GROUP N  N messages read with DefaultLitePullConsumer: assign,
 *                                         seekToBegin (GET_MIN_OFFSET), poll (PULL_MESSAGE), then
 *                                         seek back to offset 0 of one queue and read it again
 */
public final class BrokerFeatures {
    static final int WAIT_SECONDS = 60;

    public static void main(String[] args) {
        int status = 1;
        try {
            System.out.println("SERIALIZE " + org.apache.rocketmq.remoting.protocol.RemotingCommand.createRequestCommand(0, null).getSerializeTypeCurrentRPC());
            status = run(args) ? 0 : 1;
        } catch (Throwable t) {
            System.out.println("RESULT FAIL " + t);
            t.printStackTrace(System.out);
        } finally {
            System.out.flush();
            System.exit(status);
        }
    }

    static final int BULK_BODY = 200 * 1024;

    /** bulkBody is message i's body in bulk mode: incompressible bytes seeded by prefix and i. */
    static byte[] bulkBody(String prefix, int i) {
        byte[] b = new byte[BULK_BODY];
        new java.util.Random(prefix.hashCode() * 31L + i).nextBytes(b);
        return b;
    }

    static DefaultMQPushConsumer consumer(String namesrv, String group) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(group + "_" + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPersistConsumerOffsetInterval(1000);
        return c;
    }

    static String line(MessageExt m) {
        return "queue=" + m.getQueueId() + " queueOffset=" + m.getQueueOffset() + " topic=" + m.getTopic() + " msgId=" + m.getMsgId()
            + " reconsume=" + m.getReconsumeTimes() + " born=" + m.getBornTimestamp() + " store=" + m.getStoreTimestamp();
    }

    /**
     * deliveredProperties is m's properties in key order, with the values that differ from
     * run to run or broker to broker (ids, offsets, times, the queue the producer picked, the
     * topic and prefix names) masked,
     * so that two brokers' deliveries of the same message compare equal as text.
     */
    static String deliveredProperties(MessageExt m, String topic, String prefix) {
        java.util.Set<String> masked = java.util.Set.of("UNIQ_KEY", "MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME", "CLUSTER", "REAL_QID");
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, String> e : new TreeMap<>(m.getProperties()).entrySet()) {
            String v = masked.contains(e.getKey()) ? "*" : e.getValue().replace(topic, "<topic>").replace(prefix, "<prefix>");
            b.append(e.getKey()).append('=').append(v).append(' ');
        }
        return b.toString().trim();
    }

    static void sendOK(SendResult r, String what) {
        System.out.println("SENT " + what + " " + r.getSendStatus() + " queue=" + r.getMessageQueue().getQueueId() + " queueOffset=" + r.getQueueOffset());
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send " + what + ": " + r);
        }
    }

    static boolean run(String[] a) throws Exception {
        String mode = a[0], namesrv = a[1], topic = a[2], prefix = a[3], group = a[4];
        int n = a.length > 5 ? Integer.parseInt(a[5]) : 1;
        DefaultMQProducer p = BrokerClient.producer(namesrv, prefix);
        DefaultMQPushConsumer c = consumer(namesrv, group);
        List<String> bad = new CopyOnWriteArrayList<>();
        Map<Integer, Integer> got = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(1);
        try {
            switch (mode) {
                case "retry": {
                    c.subscribe(topic, "*");
                    List<Integer> times = new CopyOnWriteArrayList<>();
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            System.out.println("RECV " + line(m));
                            String diff = BrokerClient.check(m, topic, prefix, 0);
                            if (!diff.isEmpty()) bad.add("delivery " + times.size() + ": " + diff);
                            times.add(m.getReconsumeTimes());
                            got.put(times.size(), m.getQueueId());
                        }
                        if (times.size() == 1) {
                            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                        }
                        done.countDown();
                        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                    });
                    c.start();
                    // The broker creates %RETRY%GROUP at the first heartbeat, after the
                    // consumer's first rebalance: rebalance again once the client has its
                    // route, rather than at the next 20s rebalance.
                    Thread.sleep(1500);
                    c.getDefaultMQPushConsumerImpl().getmQClientFactory().rebalanceImmediately();
                    sendOK(p.send(BrokerClient.message(topic, prefix, 0, true)), "0");
                    if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        System.out.println("RESULT FAIL after RECONSUME_LATER the message was not redelivered within " + WAIT_SECONDS + "s; deliveries' reconsumeTimes: " + times);
                        return false;
                    }
                    Thread.sleep(2000);
                    if (!times.equals(List.of(0, 1))) {
                        System.out.println("RESULT FAIL deliveries' reconsumeTimes " + times + ", want [0, 1]");
                        return false;
                    }
                    break;
                }
                case "orderly": {
                    c.subscribe(topic, "*");
                    Map<Integer, List<Integer>> perQueue = new ConcurrentHashMap<>();
                    c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            int i = Integer.parseInt(m.getUserProperty("compat_index"));
                            System.out.println("RECV " + i + " " + line(m));
                            String diff = BrokerClient.check(m, topic, prefix, i);
                            if (!diff.isEmpty()) bad.add("message " + i + ": " + diff);
                            perQueue.computeIfAbsent(i % 2, k -> new CopyOnWriteArrayList<>()).add(i);
                            got.put(i, m.getQueueId());
                        }
                        if (got.size() >= n) done.countDown();
                        return ConsumeOrderlyStatus.SUCCESS;
                    });
                    for (int i = 0; i < n; i++) {
                        sendOK(p.send(BrokerClient.message(topic, prefix, i, true), (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size()), i % 2), Integer.toString(i));
                    }
                    c.start();
                    if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        System.out.println("RESULT FAIL orderly consumer got " + got.size() + " of " + n + " within " + WAIT_SECONDS + "s: " + new TreeMap<>(got));
                        return false;
                    }
                    for (Map.Entry<Integer, List<Integer>> e : perQueue.entrySet()) {
                        List<Integer> l = e.getValue();
                        for (int k = 1; k < l.size(); k++) {
                            if (l.get(k) < l.get(k - 1)) bad.add("shard " + e.getKey() + " consumed out of order: " + l);
                        }
                    }
                    Thread.sleep(2000);
                    break;
                }
                case "delay": {
                    c.subscribe(topic, "*");
                    long[] at = new long[1];
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            at[0] = System.currentTimeMillis();
                            System.out.println("RECV " + line(m) + " delayLevelProperty=" + m.getProperty("DELAY") + " realTopic=" + m.getProperty("REAL_TOPIC"));
                            System.out.println("PROPS " + deliveredProperties(m, topic, prefix));
                            String diff = BrokerClient.check(m, topic, prefix, 0);
                            if (!diff.isEmpty()) bad.add(diff);
                            if (m.getDelayTimeLevel() != 2) bad.add("getDelayTimeLevel() " + m.getDelayTimeLevel() + ", sent with 2");
                            if (!String.valueOf(m.getQueueId()).equals(m.getProperty("REAL_QID"))) bad.add("REAL_QID " + m.getProperty("REAL_QID") + " on queue " + m.getQueueId());
                            if (m.getStoreTimestamp() - m.getBornTimestamp() < 800) {
                                bad.add("delivered " + (m.getStoreTimestamp() - m.getBornTimestamp()) + "ms after it was born, want >= 1s (delayTimeLevel 2)");
                            }
                            got.put(0, m.getQueueId());
                        }
                        done.countDown();
                        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                    });
                    c.start();
                    Message m = BrokerClient.message(topic, prefix, 0, true);
                    m.setDelayTimeLevel(2);
                    long sent = System.currentTimeMillis();
                    sendOK(p.send(m), "0 delayTimeLevel=2");
                    if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        System.out.println("RESULT FAIL the delayed message never arrived within " + WAIT_SECONDS + "s");
                        return false;
                    }
                    System.out.println("DELAYED " + (at[0] - sent) + "ms");
                    Thread.sleep(2000);
                    break;
                }
                case "async": {
                    c.subscribe(topic, "*");
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            int i = Integer.parseInt(m.getUserProperty("compat_index"));
                            System.out.println("RECV " + i + " " + line(m));
                            String diff = BrokerClient.check(m, topic, prefix, i);
                            if (!diff.isEmpty()) bad.add("message " + i + ": " + diff);
                            got.put(i, m.getQueueId());
                        }
                        if (got.size() >= 2 * n) done.countDown();
                        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                    });
                    c.start();
                    CountDownLatch acks = new CountDownLatch(n);
                    for (int i = 0; i < n; i++) {
                        final int idx = i;
                        p.send(BrokerClient.message(topic, prefix, i, true), new SendCallback() {
                            public void onSuccess(SendResult r) {
                                System.out.println("SENT async " + idx + " " + r.getSendStatus());
                                if (r.getSendStatus() != SendStatus.SEND_OK) bad.add("async send " + idx + ": " + r);
                                acks.countDown();
                            }
                            public void onException(Throwable e) {
                                bad.add("async send " + idx + ": " + e);
                                acks.countDown();
                            }
                        });
                    }
                    for (int i = n; i < 2 * n; i++) {
                        p.sendOneway(BrokerClient.message(topic, prefix, i, true));
                    }
                    if (!acks.await(30, TimeUnit.SECONDS)) bad.add("async send callbacks missing after 30s: " + acks.getCount());
                    if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        System.out.println("RESULT FAIL consumed " + got.size() + " of " + (2 * n) + " (async 0.." + (n - 1) + ", oneway " + n + ".." + (2 * n - 1) + "): " + new TreeMap<>(got).keySet() + " " + bad);
                        return false;
                    }
                    Thread.sleep(2000);
                    break;
                }
                case "sql": {
                    c.subscribe(topic, MessageSelector.bySql("compat_index >= 2"));
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            int i = Integer.parseInt(m.getUserProperty("compat_index"));
                            System.out.println("RECV " + i + " " + line(m));
                            String diff = BrokerClient.check(m, topic, prefix, i);
                            if (!diff.isEmpty()) bad.add("message " + i + ": " + diff);
                            if (i < 2) bad.add("message " + i + " does not match compat_index >= 2 but was delivered");
                            got.put(i, m.getQueueId());
                        }
                        if (got.size() >= n - 2) done.countDown();
                        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                    });
                    c.start();
                    for (int i = 0; i < n; i++) {
                        sendOK(p.send(BrokerClient.message(topic, prefix, i, true)), Integer.toString(i));
                    }
                    if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        System.out.println("RESULT FAIL SQL92 consumer got " + new TreeMap<>(got).keySet() + ", want 2.." + (n - 1) + " within " + WAIT_SECONDS + "s " + bad);
                        return false;
                    }
                    Thread.sleep(3000); // anything unwanted would arrive by now
                    break;
                }
                case "bulk": {
                    c.subscribe(topic, "*");
                    c.setPullBatchSize(8);
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            int i = Integer.parseInt(m.getUserProperty("compat_index"));
                            System.out.println("RECV " + i + " " + line(m) + " bodyLen=" + m.getBody().length + " sysFlag=" + m.getSysFlag() + " commitLogOffset=" + m.getCommitLogOffset());
                            if (!java.util.Arrays.equals(bulkBody(prefix, i), m.getBody())) bad.add("message " + i + ": body of " + m.getBody().length + " bytes differs");
                            if (!BrokerClient.key(prefix, i).equals(m.getKeys()) || !BrokerClient.tag(prefix).equals(m.getTags())) bad.add("message " + i + ": keys " + m.getKeys() + " tags " + m.getTags());
                            got.put(i, m.getQueueId());
                        }
                        if (got.size() >= n) done.countDown();
                        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                    });
                    for (int i = 0; i < n; i++) {
                        Message m = new Message(topic, BrokerClient.tag(prefix), BrokerClient.key(prefix, i), bulkBody(prefix, i));
                        m.putUserProperty("compat_index", Integer.toString(i));
                        SendResult r = p.send(m);
                        System.out.println("SENT " + i + " " + r.getSendStatus() + " queue=" + r.getMessageQueue().getQueueId() + " queueOffset=" + r.getQueueOffset() + " offsetMsgId=" + r.getOffsetMsgId());
                        if (r.getSendStatus() != SendStatus.SEND_OK) throw new IllegalStateException("send " + i + ": " + r);
                    }
                    c.start();
                    if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        System.out.println("RESULT FAIL consumed " + got.size() + " of " + n + " big messages within " + WAIT_SECONDS + "s: " + new TreeMap<>(got).keySet() + " " + bad);
                        return false;
                    }
                    Thread.sleep(1000);
                    break;
                }
                case "txn": {
                    c.subscribe(topic, "*");
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                        for (MessageExt m : msgs) {
                            int i = Integer.parseInt(m.getUserProperty("compat_index"));
                            System.out.println("RECV " + i + " " + line(m) + " TRAN_MSG=" + m.getProperty("TRAN_MSG") + " sysFlag=" + m.getSysFlag());
                            String diff = BrokerClient.check(m, topic, prefix, i);
                            if (!diff.isEmpty()) bad.add("message " + i + ": " + diff);
                            if (i == 1) bad.add("message 1 was rolled back but delivered");
                            got.put(i, m.getQueueId());
                        }
                        if (got.containsKey(0) && got.containsKey(2)) done.countDown();
                        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                    });
                    c.start();
                    TransactionMQProducer tp = new TransactionMQProducer("compat_txn_producer_" + prefix);
                    tp.setNamesrvAddr(namesrv);
                    tp.setInstanceName("compat_txn_producer_" + prefix + "_" + System.nanoTime());
                    tp.setSendMsgTimeout(10000);
                    List<String> checks = new CopyOnWriteArrayList<>();
                    tp.setTransactionListener(new TransactionListener() {
                        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                            switch ((Integer) arg) {
                                case 0: return LocalTransactionState.COMMIT_MESSAGE;
                                case 1: return LocalTransactionState.ROLLBACK_MESSAGE;
                                default: return LocalTransactionState.UNKNOW;
                            }
                        }
                        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                            String idx = msg.getUserProperty("compat_index");
                            System.out.println("CHECK " + idx + " transactionId=" + msg.getTransactionId() + " " + line(msg));
                            checks.add(idx);
                            return "2".equals(idx) ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
                        }
                    });
                    tp.start();
                    try {
                        for (int i = 0; i < 3; i++) {
                            TransactionSendResult r = tp.sendMessageInTransaction(BrokerClient.message(topic, prefix, i, true), i);
                            System.out.println("SENT " + i + " " + r.getSendStatus() + " localState=" + r.getLocalTransactionState() + " transactionId=" + r.getTransactionId());
                            if (r.getSendStatus() != SendStatus.SEND_OK) throw new IllegalStateException("half message " + i + ": " + r);
                        }
                        if (!done.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                            System.out.println("RESULT FAIL consumed " + new TreeMap<>(got).keySet() + " within " + WAIT_SECONDS + "s, want 0 (committed) and 2 (UNKNOW, committed on check-back); check-backs: " + checks + " " + bad);
                            return false;
                        }
                        Thread.sleep(3000); // a wrongly delivered message 1 would come by now
                    } finally {
                        tp.shutdown();
                    }
                    if (!checks.contains("2")) bad.add("message 2 delivered without a check-back: " + checks);
                    if (checks.contains("0") || checks.contains("1")) bad.add("check-back for a resolved transaction: " + checks);
                    break;
                }
                case "lite": {
                    for (int i = 0; i < n; i++) {
                        sendOK(p.send(BrokerClient.message(topic, prefix, i, false)), Integer.toString(i));
                    }
                    DefaultLitePullConsumer lc = new DefaultLitePullConsumer(group);
                    lc.setNamesrvAddr(namesrv);
                    lc.setInstanceName(group + "_" + System.nanoTime());
                    lc.setAutoCommit(false);
                    lc.setPollTimeoutMillis(2000);
                    lc.start();
                    try {
                        List<MessageQueue> mqs = new ArrayList<>(lc.fetchMessageQueues(topic));
                        mqs.sort(null);
                        System.out.println("QUEUES " + mqs);
                        lc.assign(mqs);
                        for (MessageQueue mq : mqs) {
                            lc.seekToBegin(mq);
                        }
                        Map<Integer, Integer> perQueue = new TreeMap<>();
                        long deadline = System.currentTimeMillis() + WAIT_SECONDS * 1000L;
                        while (got.size() < n && System.currentTimeMillis() < deadline) {
                            for (MessageExt m : lc.poll()) {
                                int i = Integer.parseInt(m.getUserProperty("compat_index"));
                                System.out.println("RECV " + i + " " + line(m));
                                String diff = BrokerClient.check(m, topic, prefix, i);
                                if (!diff.isEmpty()) bad.add("message " + i + ": " + diff);
                                got.put(i, m.getQueueId());
                                perQueue.merge(m.getQueueId(), 1, Integer::sum);
                            }
                        }
                        if (got.size() < n) {
                            System.out.println("RESULT FAIL lite pull consumer polled " + new TreeMap<>(got).keySet() + " of " + n + " within " + WAIT_SECONDS + "s " + bad);
                            return false;
                        }
                        // Read the first non-empty queue again from offset 0.
                        MessageQueue again = null;
                        for (MessageQueue mq : mqs) {
                            if (perQueue.getOrDefault(mq.getQueueId(), 0) > 0) {
                                again = mq;
                                break;
                            }
                        }
                        lc.seek(again, 0);
                        int want = perQueue.get(again.getQueueId()), reread = 0;
                        deadline = System.currentTimeMillis() + 30000L;
                        while (reread < want && System.currentTimeMillis() < deadline) {
                            for (MessageExt m : lc.poll()) {
                                if (m.getQueueId() == again.getQueueId()) reread++;
                            }
                        }
                        System.out.println("REREAD " + again + " " + reread + " of " + want);
                        if (reread < want) bad.add("after seek(" + again + ", 0) polled " + reread + " of its " + want + " messages again");
                    } finally {
                        lc.shutdown();
                    }
                    break;
                }
                default:
                    System.out.println("RESULT FAIL unknown mode " + mode);
                    return false;
            }
        } finally {
            c.shutdown();
            p.shutdown();
        }
        if (!bad.isEmpty()) {
            System.out.println("RESULT FAIL " + bad);
            return false;
        }
        System.out.println("RESULT OK " + mode + " received=" + got.size());
        return true;
    }
}
