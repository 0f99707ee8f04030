// The Java Kafka client's side of kafkatest's java_test.go: one mode per
// run, the bootstrap address and the mode's arguments on the command line,
// records (for produce) on standard input, one JSON value on standard
// output. The client's own log lines (warnings and up) go to standard
// error, which the Go test shows when a run fails.
//
// Standard input for produce has one record a line, fields separated by
// one space: TIMESTAMP KEY VALUE HEADERS. Bytes are hex, "-" is null and
// "." is empty; HEADERS is "." or comma-separated KEYHEX:VALUEHEX pairs.
// The JSON output carries bytes as hex and null as null, in kafkatest's
// wireRecord shape.
package folio;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class JavaClient {
    private static final HexFormat HEX = HexFormat.of();
    // How long a consume waits for its records before it gives up.
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            throw new IllegalArgumentException("usage: MODE BOOTSTRAP ARGS...");
        }
        String mode = args[0], boot = args[1];
        String out;
        switch (mode) {
            case "version":
                out = quote(org.apache.kafka.common.utils.AppInfoParser.getVersion());
                break;
            case "produce":
                out = produce(boot, args[2], args[3], overrides(args, 4));
                break;
            case "consume":
                out = consume(boot, args[2], null, Integer.parseInt(args[3]), overrides(args, 4));
                break;
            case "group":
                out = consume(boot, args[2], args[3], Integer.parseInt(args[4]), overrides(args, 5));
                break;
            case "split":
                out = split(boot, args[2], args[3], args[4]);
                break;
            case "groups":
                out = groups(boot, args[2], args[3]);
                break;
            case "transactional":
                out = transactional(boot, args[2]);
                break;
            case "admin":
                out = admin(boot, args[2], args[3], Long.parseLong(args[4]), Integer.parseInt(args[5]), Long.parseLong(args[6]));
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
        System.out.print(out);
        System.out.flush();
    }

    // overrides reads the client configs given as KEY=VALUE arguments from
    // args[from] on.
    static Properties overrides(String[] args, int from) {
        Properties p = new Properties();
        for (int i = from; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("not KEY=VALUE: " + args[i]);
            }
            p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        return p;
    }

    // produce sends the records on standard input with an idempotent
    // producer, acks=all, in one codec (and the overrides), and prints
    // {"acks":[[PARTITION,OFFSET],...],"retries":N}: where each record
    // went, in input order, and how many sends the producer retried (each
    // retry is an error the broker answered, or a request that timed
    // out).
    static String produce(String boot, String topic, String codec, Properties extra) throws Exception {
        List<ProducerRecord<byte[], byte[]>> recs = readRecords(topic);
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        double retries;
        try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(producerConfig(boot, codec, extra), new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ProducerRecord<byte[], byte[]> r : recs) {
                acks.add(prod.send(r));
            }
            prod.flush();
            retries = metric(prod.metrics(), "record-retry-total");
        }
        StringBuilder b = new StringBuilder("{\"acks\":[");
        for (int i = 0; i < acks.size(); i++) {
            RecordMetadata m = acks.get(i).get();
            if (i > 0) {
                b.append(',');
            }
            b.append('[').append(m.partition()).append(',').append(m.offset()).append(']');
        }
        return b.append("],\"retries\":").append((long) retries).append('}').toString();
    }

    // producerConfig is the idempotent, acks=all producer's configuration.
    static Properties producerConfig(String boot, String codec, Properties extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "folio-java-test");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.putAll(extra);
        return p;
    }

    // readRecords reads the records on standard input, for topic.
    static List<ProducerRecord<byte[], byte[]>> readRecords(String topic) throws Exception {
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split(" ", -1);
            if (f.length != 4) {
                throw new IllegalArgumentException("bad record line: " + line);
            }
            Long ts = f[0].equals("-") ? null : Long.valueOf(f[0]);
            RecordHeaders hs = new RecordHeaders();
            if (!f[3].equals(".")) {
                for (String h : f[3].split(",", -1)) {
                    int colon = h.indexOf(':');
                    hs.add(new String(unhex(h.substring(0, colon)), StandardCharsets.UTF_8), unhex(h.substring(colon + 1)));
                }
            }
            out.add(new ProducerRecord<>(topic, null, ts, unhex(f[1]), unhex(f[2]), hs));
        }
        return out;
    }

    // metric is the value of the producer-metrics metric of that name.
    static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            if (e.getKey().group().equals("producer-metrics") && e.getKey().name().equals(name)) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        throw new IllegalStateException("no producer metric " + name);
    }

    // consume reads n records from the start of every partition of topic:
    // without a group by assigning them, with one by subscribing as a
    // member of a classic group, which commits what it read before it
    // leaves. It prints every record it read, which may be more than n.
    static String consume(String boot, String topic, String group, int n, Properties extra) {
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerConfig(boot, group, extra), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            if (group == null) {
                List<TopicPartition> tps = new ArrayList<>();
                for (PartitionInfo pi : c.partitionsFor(topic, DEADLINE)) {
                    tps.add(new TopicPartition(topic, pi.partition()));
                }
                c.assign(tps);
                c.seekToBeginning(tps);
            } else {
                c.subscribe(List.of(topic));
            }
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (got.size() < n) {
                if (System.nanoTime() > end) {
                    throw new IllegalStateException("read " + got.size() + " of " + n + " records in " + DEADLINE);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    got.add(r);
                }
            }
            if (group != null) {
                c.commitSync(DEADLINE);
            }
        }
        return recordsJSON(got);
    }

    // consumerConfig is the consumer's configuration: reading from the
    // start, committing only when told, in a classic group if group is not
    // null.
    static Properties consumerConfig(String boot, String group, Properties extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "folio-java-test");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        p.putAll(extra);
        return p;
    }

    // split runs two members of a classic group with one assignor
    // (partition.assignment.strategy) over topic until they split its
    // partitions between them, then produces the records on standard
    // input, reads them with the two members, commits and leaves. It
    // prints {"a":[PARTITION,...],"b":[...],"records":[...]}.
    static String split(String boot, String topic, String group, String assignor) throws Exception {
        List<ProducerRecord<byte[], byte[]>> recs = readRecords(topic);
        Properties extra = new Properties();
        extra.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        TreeMap<Integer, Boolean> a = new TreeMap<>(), b = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> ca = new KafkaConsumer<>(consumerConfig(boot, group, extra), new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaConsumer<byte[], byte[]> cb = new KafkaConsumer<>(consumerConfig(boot, group, extra), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            int partitions = ca.partitionsFor(topic, DEADLINE).size();
            ca.subscribe(List.of(topic));
            cb.subscribe(List.of(topic));
            long end = System.nanoTime() + DEADLINE.toNanos();
            // The topic is empty: poll until the assignment is split.
            while (true) {
                if (System.nanoTime() > end) {
                    throw new IllegalStateException("the members were assigned " + ca.assignment() + " and " + cb.assignment() + " in " + DEADLINE);
                }
                got.addAll(toList(ca.poll(Duration.ofMillis(100))));
                got.addAll(toList(cb.poll(Duration.ofMillis(100))));
                Set<TopicPartition> sa = ca.assignment(), sb = cb.assignment();
                Set<TopicPartition> union = new HashSet<>(sa);
                union.addAll(sb);
                if (!sa.isEmpty() && !sb.isEmpty() && union.size() == sa.size() + sb.size() && union.size() == partitions) {
                    break;
                }
            }
            try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(producerConfig(boot, "none", new Properties()), new ByteArraySerializer(), new ByteArraySerializer())) {
                for (ProducerRecord<byte[], byte[]> r : recs) {
                    prod.send(r);
                }
                prod.flush();
            }
            while (got.size() < recs.size()) {
                if (System.nanoTime() > end) {
                    throw new IllegalStateException("read " + got.size() + " of " + recs.size() + " records in " + DEADLINE);
                }
                got.addAll(toList(ca.poll(Duration.ofMillis(100))));
                got.addAll(toList(cb.poll(Duration.ofMillis(100))));
            }
            for (TopicPartition tp : ca.assignment()) {
                a.put(tp.partition(), true);
            }
            for (TopicPartition tp : cb.assignment()) {
                b.put(tp.partition(), true);
            }
            ca.commitSync(DEADLINE);
            cb.commitSync(DEADLINE);
        }
        return "{\"a\":" + a.keySet() + ",\"b\":" + b.keySet() + ",\"records\":" + recordsJSON(got) + "}";
    }

    static List<ConsumerRecord<byte[], byte[]>> toList(Iterable<ConsumerRecord<byte[], byte[]>> rs) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        rs.forEach(out::add);
        return out;
    }

    // recordsJSON writes records in kafkatest's wireRecord shape.
    static String recordsJSON(List<ConsumerRecord<byte[], byte[]>> got) {
        StringBuilder b = new StringBuilder("[");
        for (ConsumerRecord<byte[], byte[]> r : got) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append("{\"partition\":").append(r.partition())
                .append(",\"offset\":").append(r.offset())
                .append(",\"timestamp\":").append(r.timestamp())
                .append(",\"key\":").append(hexOrNull(r.key()))
                .append(",\"value\":").append(hexOrNull(r.value()))
                .append(",\"headers\":[");
            boolean first = true;
            for (Header h : r.headers()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append('[').append(quote(h.key())).append(',').append(hexOrNull(h.value())).append(']');
            }
            b.append("]}");
        }
        return b.append(']').toString();
    }

    // transactional starts a transactional producer, which Folio does not
    // serve, and prints how initTransactions failed and how long it took:
    // {"error":CLASS,"message":MESSAGE,"ms":MILLISECONDS}.
    static String transactional(String boot, String id) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "folio-java-test");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        long start = System.nanoTime();
        String error = "none", message = "";
        try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            prod.initTransactions();
        } catch (RuntimeException e) {
            error = e.getClass().getName();
            message = String.valueOf(e.getMessage());
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        return "{\"error\":" + quote(error) + ",\"message\":" + quote(message) + ",\"ms\":" + ms + "}";
    }

    // admin creates newTopic (2 partitions, two topic configs), describes
    // it and topic, reads their configs, lists topic's offsets (earliest,
    // latest, max timestamp, by timestamp at), deletes the records of
    // partition delPart before delBefore, and lists the earliest offsets
    // again; then it sets one config of newTopic, grows it to 4
    // partitions, describes it again and deletes it.
    static String admin(String boot, String topic, String newTopic, long at, int delPart, long delBefore) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "folio-java-test");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        StringBuilder b = new StringBuilder("{");
        try (Admin a = Admin.create(p)) {
            Map<String, String> cfg = new TreeMap<>();
            cfg.put("retention.ms", "3600000");
            cfg.put("cleanup.policy", "compact");
            a.createTopics(List.of(new NewTopic(newTopic, 2, (short) 1).configs(cfg))).all().get();

            Map<String, TopicDescription> ds = a.describeTopics(List.of(topic, newTopic)).allTopicNames().get();
            b.append("\"topics\":{");
            boolean first = true;
            for (TopicDescription d : new TreeMap<>(ds).values()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append(quote(d.name())).append(":{\"id\":").append(quote(d.topicId().toString()))
                    .append(",\"internal\":").append(d.isInternal()).append(",\"partitions\":[");
                boolean firstP = true;
                for (TopicPartitionInfo pi : d.partitions()) {
                    if (!firstP) {
                        b.append(',');
                    }
                    firstP = false;
                    b.append("{\"partition\":").append(pi.partition())
                        .append(",\"leader\":").append(pi.leader() == null ? -1 : pi.leader().id())
                        .append(",\"replicas\":").append(pi.replicas().size())
                        .append(",\"isr\":").append(pi.isr().size()).append('}');
                }
                b.append("]}");
            }
            b.append('}');

            ConfigResource r1 = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            ConfigResource r2 = new ConfigResource(ConfigResource.Type.TOPIC, newTopic);
            Map<ConfigResource, Config> cs = a.describeConfigs(List.of(r1, r2)).all().get();
            b.append(",\"configs\":{").append(quote(topic)).append(':').append(configJSON(cs.get(r1)))
                .append(',').append(quote(newTopic)).append(':').append(configJSON(cs.get(r2))).append('}');

            List<TopicPartition> tps = new ArrayList<>();
            for (TopicPartitionInfo pi : ds.get(topic).partitions()) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            b.append(",\"earliest\":").append(offsets(a, tps, OffsetSpec.earliest()))
                .append(",\"latest\":").append(offsets(a, tps, OffsetSpec.latest()))
                .append(",\"maxTimestamp\":").append(offsets(a, tps, OffsetSpec.maxTimestamp()))
                .append(",\"byTime\":").append(offsets(a, tps, OffsetSpec.forTimestamp(at)));

            TopicPartition del = new TopicPartition(topic, delPart);
            long low = a.deleteRecords(Map.of(del, RecordsToDelete.beforeOffset(delBefore)))
                .lowWatermarks().get(del).get().lowWatermark();
            b.append(",\"lowWatermark\":").append(low)
                .append(",\"earliestAfterDelete\":").append(offsets(a, tps, OffsetSpec.earliest()));

            // Change newTopic: one config, more partitions; describe it
            // again, then delete it.
            a.incrementalAlterConfigs(Map.of(r2, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET))))
                .all().get();
            a.createPartitions(Map.of(newTopic, NewPartitions.increaseTo(4))).all().get();
            TopicDescription grown = a.describeTopics(List.of(newTopic)).allTopicNames().get().get(newTopic);
            Config altered = a.describeConfigs(List.of(r2)).all().get().get(r2);
            b.append(",\"grownPartitions\":").append(grown.partitions().size())
                .append(",\"alteredRetention\":").append(quote(altered.get("retention.ms").value()));
            a.deleteTopics(List.of(newTopic)).all().get();
            b.append(",\"listedAfterDelete\":").append(a.listTopics().names().get().contains(newTopic));
        }
        return b.append('}').toString();
    }

    // groups describes a group and lists its committed offsets for topic
    // with the admin client, then deletes the group:
    // {"state":STATE,"members":N,"simple":BOOL,"offsets":{"PARTITION":OFFSET,...}}.
    static String groups(String boot, String group, String topic) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "folio-java-test");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        StringBuilder b = new StringBuilder("{");
        try (Admin a = Admin.create(p)) {
            // state() rather than groupState(): kafka-clients 4.0 builds
            // before KIP-1043 have only state(), which 4.4 still has.
            ConsumerGroupDescription d = a.describeConsumerGroups(List.of(group)).all().get().get(group);
            b.append("\"state\":").append(quote(d.state().toString()))
                .append(",\"members\":").append(d.members().size())
                .append(",\"simple\":").append(d.isSimpleConsumerGroup())
                .append(",\"offsets\":{");
            Map<TopicPartition, OffsetAndMetadata> offs = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            TreeMap<Integer, Long> byPart = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offs.entrySet()) {
                if (e.getKey().topic().equals(topic)) {
                    byPart.put(e.getKey().partition(), e.getValue().offset());
                }
            }
            boolean first = true;
            for (Map.Entry<Integer, Long> e : byPart.entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append('"').append(e.getKey()).append("\":").append(e.getValue());
            }
            b.append('}');
            a.deleteConsumerGroups(List.of(group)).all().get();
        }
        return b.append('}').toString();
    }

    // offsets lists the offsets of tps at spec as
    // {"PARTITION":[OFFSET,TIMESTAMP],...}.
    static String offsets(Admin a, Collection<TopicPartition> tps, OffsetSpec spec) throws Exception {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (TopicPartition tp : tps) {
            req.put(tp, spec);
        }
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res = a.listOffsets(req).all().get();
        TreeMap<Integer, ListOffsetsResult.ListOffsetsResultInfo> byPart = new TreeMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : res.entrySet()) {
            byPart.put(e.getKey().partition(), e.getValue());
        }
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<Integer, ListOffsetsResult.ListOffsetsResultInfo> e : byPart.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(e.getKey()).append("\":[").append(e.getValue().offset())
                .append(',').append(e.getValue().timestamp()).append(']');
        }
        return b.append('}').toString();
    }

    // configJSON writes a topic's configs as {"NAME":[VALUE,SOURCE],...}.
    static String configJSON(Config c) {
        StringBuilder b = new StringBuilder("{");
        TreeMap<String, ConfigEntry> sorted = new TreeMap<>();
        for (ConfigEntry e : c.entries()) {
            sorted.put(e.name(), e);
        }
        for (ConfigEntry e : sorted.values()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(quote(e.name())).append(":[").append(e.value() == null ? "null" : quote(e.value()))
                .append(',').append(quote(e.source().name())).append(']');
        }
        return b.append('}').toString();
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) {
            return null;
        }
        if (s.equals(".")) {
            return new byte[0];
        }
        return HEX.parseHex(s);
    }

    static String hexOrNull(byte[] b) {
        return b == null ? "null" : '"' + HEX.formatHex(b) + '"';
    }

    // quote writes s as a JSON string.
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"':
                    b.append("\\\"");
                    break;
                case '\\':
                    b.append("\\\\");
                    break;
                default:
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
            }
        }
        return b.append('"').toString();
    }
}
