import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.mozilla.javascript.Context;
import org.mozilla.javascript.Function;
import org.mozilla.javascript.Scriptable;
import org.mozilla.javascript.ScriptableObject;

/**
 * Rhino running the acorn parser (JavaScript) over JavaScript files; the heap is dumped while the
 * syntax trees acorn built are held as Rhino objects.
 *
 * <p>Usage: java RhinoAcornHeap OUT.hprof acorn/dist/acorn.js FILE.js... (see ../gen_apps.sh)
 */
public class RhinoAcornHeap {
    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        Path acorn = Path.of(args[1]);
        Context cx = Context.enter();
        try {
            cx.setLanguageVersion(Context.VERSION_ES6);
            cx.setOptimizationLevel(9);
            ScriptableObject scope = cx.initStandardObjects();
            cx.evaluateString(scope, "var exports = {}; var module = { exports: exports };", "prelude", 1, null);
            cx.evaluateString(scope, Files.readString(acorn, StandardCharsets.UTF_8), acorn.toString(), 1, null);
            Scriptable exports = (Scriptable) scope.get("exports", scope);
            Function parse = (Function) exports.get("parse", exports);
            List<Object> trees = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 2; i < args.length; i++) {
                String source = Files.readString(Path.of(args[i]), StandardCharsets.UTF_8);
                Scriptable options = cx.newObject(scope);
                options.put("ecmaVersion", options, 2022);
                options.put("locations", options, true);
                trees.add(parse.call(cx, scope, exports, new Object[] {source, options}));
                System.err.printf("parsed %s in %d ms%n", args[i], (System.nanoTime() - t0) / 1_000_000);
            }
            Files.deleteIfExists(out);
            ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class).dumpHeap(out.toString(), true);
            System.err.printf("wrote %s, %d bytes%n", out, Files.size(out));
            java.lang.ref.Reference.reachabilityFence(trees);
        } finally {
            Context.exit();
        }
    }
}
