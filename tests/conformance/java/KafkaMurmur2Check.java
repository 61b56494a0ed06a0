// KafkaMurmur2Check: runs the murmur2 and partition conformance vectors
// against Apache Kafka's own Java implementation in the kafka-clients jar:
//
//   murmur2    org.apache.kafka.common.utils.Utils.murmur2(bytes)
//   partition  Utils.toPositive(Utils.murmur2(utf8(role))) % n, and the
//              producer's BuiltInPartitioner.partitionForKey(bytes, n), which
//              must agree with it (it is what a Java producer uses for keys)
//
// Usage (Java 17; kafka-clients-*.jar from tests/kafka/lib on the classpath):
//
//   javac -cp kafka-clients.jar -d out KafkaMurmur2Check.java
//   java -cp out:kafka-clients.jar KafkaMurmur2Check [--json] vectors/*.json
//
// Vectors of other operations are ignored. A partition vector whose count is
// below 1 expects this contract's invalid_partition_count error; Kafka has
// no such rule (its producer never sees such a count), so those vectors are
// named as not run. Prints one "FAIL <id>: ..." line per failure, the
// not-run line and "N passed, N failed"; with --json one object of per-group
// counts {"murmur2": {"passed": n, "failed": m, "not_run": k}, ...}.
// Exit status: 0 all passed, 1 a vector failed, 2 the files could not be read
// or no murmur2 or partition vector was run.
//
// The JSON reader below is deliberately tiny: the vector files are plain
// ASCII JSON (see tests/conformance/README.md); integers are kept as text
// so nothing goes through a double.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

public final class KafkaMurmur2Check {

    /** Marker for a JSON integer or decimal, kept as its source text. */
    record Num(String text) {}

    private static final Object NULL = new Object();

    public static void main(String[] args) {
        boolean json = false;
        List<String> files = new ArrayList<>();
        for (String a : args) {
            if (a.equals("--json") || a.equals("-json")) json = true;
            else files.add(a);
        }
        if (files.isEmpty()) {
            System.err.println("usage: KafkaMurmur2Check [--json] vector-files...");
            System.exit(2);
        }
        Map<String, int[]> groups = new LinkedHashMap<>(); // passed, failed, not run
        List<String> failures = new ArrayList<>();
        int notRunPartition = 0;
        for (String f : files) {
            Map<String, Object> file;
            try {
                file = obj(new Parser(Files.readString(Path.of(f), StandardCharsets.UTF_8)).document());
            } catch (IOException | RuntimeException e) {
                System.err.println("KafkaMurmur2Check: " + f + ": " + e.getMessage());
                System.exit(2);
                return;
            }
            for (Object item : list(file.get("vectors"))) {
                Map<String, Object> v = obj(item);
                String op = str(v.get("op"));
                if (!"murmur2".equals(op) && !"partition".equals(op)) continue;
                String group = str(file.get("group"));
                int[] g = groups.computeIfAbsent(group, k -> new int[3]);
                String id = str(v.get("id"));
                String problem;
                try {
                    problem = op.equals("murmur2") ? murmur2(v) : partition(v);
                } catch (RuntimeException | LinkageError e) {
                    problem = "raised " + e;
                }
                if (problem == null) {
                    g[0]++;
                } else if (problem.equals(NOT_RUN)) {
                    g[2]++;
                    notRunPartition++;
                } else {
                    g[1]++;
                    failures.add("FAIL " + id + ": " + problem);
                }
            }
        }
        int passed = 0, failed = 0;
        for (int[] g : groups.values()) {
            passed += g[0];
            failed += g[1];
        }
        // Files without one murmur2 or partition vector would pass with
        // "0 passed": that is an error, not a pass.
        if (passed + failed == 0) {
            System.err.println("KafkaMurmur2Check: no murmur2 or partition vector was run in " + String.join(" ", files));
            System.exit(2);
        }
        if (json) {
            StringBuilder sb = new StringBuilder("{");
            for (Map.Entry<String, int[]> e : groups.entrySet()) {
                if (sb.length() > 1) sb.append(',');
                int[] g = e.getValue();
                sb.append('"').append(e.getKey()).append("\":{\"passed\":").append(g[0])
                  .append(",\"failed\":").append(g[1]).append(",\"not_run\":").append(g[2]).append('}');
            }
            System.out.println(sb.append('}'));
        } else {
            failures.forEach(System.out::println);
            if (notRunPartition > 0) {
                System.out.println("not run: partition with a count below 1 (" + notRunPartition
                    + "): invalid_partition_count is a rule of this contract, not of Kafka");
            }
            System.out.println(passed + " passed, " + failed + " failed");
        }
        System.exit(failed > 0 ? 1 : 0);
    }

    private static final String NOT_RUN = "\0not run";

    private static String murmur2(Map<String, Object> v) {
        byte[] key = bytes(v, "key");
        Map<String, Object> exp = obj(v.get("expect"));
        if (!Boolean.TRUE.equals(exp.get("ok"))) return "vector expects an error; Kafka's murmur2 has none";
        int want = Integer.parseInt(num(exp.get("murmur2")));
        int got = Utils.murmur2(key);
        return got == want ? null : "Utils.murmur2 gave " + got + ", expected " + want;
    }

    private static String partition(Map<String, Object> v) {
        int n = Integer.parseInt(num(v.get("partitions")));
        if (n < 1) return NOT_RUN;
        byte[] role = bytes(v, "role");
        Map<String, Object> exp = obj(v.get("expect"));
        if (!Boolean.TRUE.equals(exp.get("ok"))) {
            return "vector expects an error for " + n + " partitions; Kafka computes a partition";
        }
        int want = Integer.parseInt(num(exp.get("partition")));
        int got = Utils.toPositive(Utils.murmur2(role)) % n;
        int producer = BuiltInPartitioner.partitionForKey(role, n);
        if (got != want) return "Utils.toPositive(murmur2) % " + n + " gave " + got + ", expected " + want;
        if (producer != want) return "BuiltInPartitioner.partitionForKey gave " + producer + ", expected " + want;
        return null;
    }

    /** The bytes of a text field, from its _hex companion when present. */
    private static byte[] bytes(Map<String, Object> v, String field) {
        Object hex = v.get(field + "_hex");
        if (hex instanceof String h) {
            byte[] out = new byte[h.length() / 2];
            for (int i = 0; i < out.length; i++) {
                out[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
            }
            return out;
        }
        return str(v.get(field)).getBytes(StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> obj(Object o) {
        if (o instanceof Map<?, ?> m) return (Map<String, Object>) m;
        throw new IllegalArgumentException("expected a JSON object, got " + o);
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        if (o instanceof List<?> l) return (List<Object>) l;
        throw new IllegalArgumentException("expected a JSON array, got " + o);
    }

    private static String str(Object o) {
        if (o instanceof String s) return s;
        throw new IllegalArgumentException("expected a JSON string, got " + o);
    }

    private static String num(Object o) {
        if (o instanceof Num n) return n.text();
        throw new IllegalArgumentException("expected a JSON number, got " + o);
    }

    /** A minimal strict JSON parser: objects, arrays, strings, numbers, literals. */
    private static final class Parser {
        private final String s;
        private int i;

        Parser(String s) {
            this.s = s;
        }

        Object document() {
            Object v = value();
            ws();
            if (i != s.length()) throw error("trailing characters");
            return v;
        }

        private Object value() {
            ws();
            if (i >= s.length()) throw error("unexpected end");
            char c = s.charAt(i);
            switch (c) {
                case '{': return object();
                case '[': return array();
                case '"': return string();
                case 't': return literal("true", Boolean.TRUE);
                case 'f': return literal("false", Boolean.FALSE);
                case 'n': return literal("null", NULL);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw error("unexpected character '" + c + "'");
            }
        }

        private Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            i++;
            ws();
            if (peek() == '}') { i++; return m; }
            while (true) {
                ws();
                if (peek() != '"') throw error("expected a member name");
                String k = string();
                ws();
                expect(':');
                m.put(k, value());
                ws();
                char c = next();
                if (c == '}') return m;
                if (c != ',') throw error("expected , or }");
            }
        }

        private List<Object> array() {
            List<Object> l = new ArrayList<>();
            i++;
            ws();
            if (peek() == ']') { i++; return l; }
            while (true) {
                l.add(value());
                ws();
                char c = next();
                if (c == ']') return l;
                if (c != ',') throw error("expected , or ]");
            }
        }

        private String string() {
            expect('"');
            StringBuilder sb = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') return sb.toString();
                if (c != '\\') { sb.append(c); continue; }
                char e = next();
                switch (e) {
                    case '"', '\\', '/' -> sb.append(e);
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) throw error("short \\u escape");
                        sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw error("bad escape \\" + e);
                }
            }
        }

        private Num number() {
            int start = i;
            if (peek() == '-') i++;
            while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) i++;
            return new Num(s.substring(start, i));
        }

        private Object literal(String word, Object v) {
            if (!s.startsWith(word, i)) throw error("bad literal");
            i += word.length();
            return v;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private char peek() {
            if (i >= s.length()) throw error("unexpected end");
            return s.charAt(i);
        }

        private char next() {
            char c = peek();
            i++;
            return c;
        }

        private void expect(char c) {
            if (next() != c) throw error("expected '" + c + "'");
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("JSON: " + what + " at character " + i);
        }
    }
}
