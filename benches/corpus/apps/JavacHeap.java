import com.sun.management.HotSpotDiagnosticMXBean;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.util.JavacTask;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * javac, in process, parsing and attributing JDK sources given as module folder and packages; the
 * heap is dumped (live objects) while the compiler still holds its trees, symbols and types.
 *
 * <p>Usage: java JavacHeap OUT.hprof SRC/java.base PACKAGE_DIR... (see ../gen_apps.sh)
 */
public class JavacHeap {
    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        Path module = Path.of(args[1]);
        List<File> sources = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            try (Stream<Path> walk = Files.walk(module.resolve(args[i]), 1)) {
                walk.filter(p -> p.toString().endsWith(".java")).sorted().forEach(p -> sources.add(p.toFile()));
            }
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8);
        List<String> options = List.of("--patch-module", "java.base=" + module, "-proc:none", "-implicit:none", "-nowarn", "-Xlint:none");
        long t0 = System.nanoTime();
        JavacTask task = (JavacTask) javac.getTask(null, files, diagnostics, options, null, files.getJavaFileObjectsFromFiles(sources));
        List<CompilationUnitTree> units = new ArrayList<>();
        task.parse().forEach(units::add);
        task.analyze();
        System.err.printf("%d sources, %d diagnostics, %d ms%n", units.size(), diagnostics.getDiagnostics().size(), (System.nanoTime() - t0) / 1_000_000);
        Files.deleteIfExists(out);
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class).dumpHeap(out.toString(), true);
        System.err.printf("wrote %s, %d bytes%n", out, Files.size(out));
        java.lang.ref.Reference.reachabilityFence(task);
        java.lang.ref.Reference.reachabilityFence(units);
    }
}
