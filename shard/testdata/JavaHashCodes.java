// Regenerates java_hashcodes.txt, the golden file for the Java-compatible extractors:
//   java shard/testdata/JavaHashCodes.java > shard/testdata/java_hashcodes.txt
// Each line: the entity id (Go-quoted by escaping \ and non-ASCII as \\uXXXX), its
// String.hashCode, Akka's shard for 1000 shards and Shardcake's for 300.
import java.util.Random;

public class JavaHashCodes {
  public static void main(String[] args) {
    String[] fixed = {"", "a", "abc", "hello", "polygenelubricants", "Aa", "BB", "entity-42", "\u00e9",
        "\ud83d\ude00", "counter-\u4e2d\u6587", "GydZG_", "DESIGNING WORKHOUSES"};
    for (String s : fixed) print(s);
    Random r = new Random(42);
    String alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:/ \u00e9\u00fc\u4e2d\u6587\u03a9";
    for (int i = 0; i < 2000; i++) {
      StringBuilder b = new StringBuilder();
      int n = r.nextInt(40);
      for (int j = 0; j < n; j++) {
        if (r.nextInt(50) == 0) b.appendCodePoint(0x1F600 + r.nextInt(64)); // surrogate pairs
        else b.append(alphabet.charAt(r.nextInt(alphabet.length())));
      }
      print(b.toString());
    }
  }

  static void print(String s) {
    StringBuilder q = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80 && c != '\\' && c != ' ') q.append(c);
      else q.append(String.format("\\u%04x", (int) c));
    }
    int h = s.hashCode();
    System.out.println(q + " " + h + " " + (Math.abs(h) % 1000) + " " + (Math.abs(h % 300) + 1));
  }
}
