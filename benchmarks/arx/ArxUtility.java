// ARX utility harness: anonymizes one data set with ARX and prints ARX's own utility figures
// (quality models and classification performance) as ONE JSON line on stdout, so that a Python
// benchmark can compare them with blendin's figures computed on the same release.
//
// Usage: java -cp CP ArxUtility DATA_DIR SET TARGET K SUPPRESSION OUT_CSV [NUMERIC_COLUMNS]
//   SET      adult (DATA_DIR/adult/adult.csv, adult_hierarchy_<col>.csv)
//            fars  (DATA_DIR/fars/fars_int.csv, fars_int_hierarchy_<col>.csv)
//   TARGET   class attribute (INSENSITIVE_ATTRIBUTE); every other column with a hierarchy is a QI
//   NUMERIC  comma-separated columns typed DataType.INTEGER (all others stay strings)
// ARX settings: KAnonymity(K), suppression limit SUPPRESSION, ARX's default metric (Loss),
// optimal algorithm (Flash). The release (all rows, input order, suppressed records as ARX
// writes them) goes to OUT_CSV with ';' and a header.
// Classification: ARX's getClassificationPerformance(QIs, TARGET, config) for logistic
// regression, naive Bayes and random forest with ARX's defaults (deterministic, seed
// Integer.MAX_VALUE, 10 folds, at most 100000 records). ARX does not seed SMILE's random
// forest; this harness seeds SMILE's thread-local RNG (smile.math.Math.setSeed) with the same
// seed right before each call so that the random forest is reproducible (-Dsmile.seed=none skips it).
// Optional: -Dmodels=lr,nb,rf (which models, default all three; the forest, 500 trees x 10 folds x
// 2 models, takes most of the time), -Dmax.records=N (ARX's record cap, default 100000).
// Build: benchmarks/arx/build_utility.sh
import java.io.File;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.*;

import org.deidentifier.arx.*;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.aggregates.ClassificationConfigurationLogisticRegression;
import org.deidentifier.arx.aggregates.ClassificationConfigurationNaiveBayes;
import org.deidentifier.arx.aggregates.ClassificationConfigurationRandomForest;
import org.deidentifier.arx.aggregates.StatisticsClassification;
import org.deidentifier.arx.aggregates.StatisticsQuality;
import org.deidentifier.arx.aggregates.quality.QualityMeasureColumnOriented;
import org.deidentifier.arx.aggregates.quality.QualityMeasureRowOriented;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class ArxUtility {

    // ---------------------------------------------------------------- JSON helpers
    static String num(double d) {
        return (Double.isNaN(d) || Double.isInfinite(d)) ? "null" : Double.toString(d);
    }

    static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** Ordered JSON object builder */
    static final class Obj {
        private final StringBuilder b = new StringBuilder("{");
        private boolean first = true;
        Obj raw(String k, String v) { if (!first) b.append(','); first = false; b.append(str(k)).append(':').append(v); return this; }
        Obj put(String k, double v) { return raw(k, num(v)); }
        Obj put(String k, long v) { return raw(k, Long.toString(v)); }
        Obj put(String k, boolean v) { return raw(k, Boolean.toString(v)); }
        Obj put(String k, String v) { return raw(k, str(v)); }
        Obj put(String k, Obj v) { return raw(k, v.toString()); }
        @Override public String toString() { return b.toString() + "}"; }
    }

    static String errorOf(Throwable t) {
        Throwable root = t;
        StringBuilder s = new StringBuilder(t.toString());
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
            s.append(" <- ").append(root.toString());
        }
        return s.toString();
    }

    static String[] cols(File f) throws Exception {
        try (Scanner s = new Scanner(f, "UTF-8")) { return s.nextLine().trim().split(";"); }
    }

    // ---------------------------------------------------------------- raw values via reflection
    // ARX only exposes normalised values; the raw (result, minimum, maximum) triple shows how the
    // normalisation / aggregation works, so it is read from the private fields for reference.
    @SuppressWarnings("unchecked")
    static Map<String, Double> mapField(Object o, String name) {
        try {
            Field f = o.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return (Map<String, Double>) f.get(o);
        } catch (Exception e) {
            return null;
        }
    }

    static double doubleField(Object o, String name) {
        try {
            Field f = o.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return f.getDouble(o);
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    static Obj columnMeasure(QualityMeasureColumnOriented m, List<String> qis) {
        Obj o = new Obj();
        Obj per = new Obj();
        for (String q : qis) per.put(q, m.isAvailable(q) ? m.getValue(q) : Double.NaN);
        o.put("per_attribute", per);
        o.put("overall", m.getArithmeticMean(false));            // what ARX's GUI shows ("arithmetic mean")
        o.put("overall_geometric", m.getGeometricMean(false));
        o.put("overall_mean_of_normalized", m.getArithmeticMean(true));
        Map<String, Double> r = mapField(m, "result"), lo = mapField(m, "minimum"), hi = mapField(m, "maximum");
        Obj raw = new Obj();
        for (String q : qis) {
            Double v = r == null ? null : r.get(q), a = lo == null ? null : lo.get(q), z = hi == null ? null : hi.get(q);
            raw.raw(q, "[" + num(v == null ? Double.NaN : v) + "," + num(a == null ? Double.NaN : a) + ","
                    + num(z == null ? Double.NaN : z) + "]");
        }
        o.put("raw_result_min_max", raw);
        return o;
    }

    static Obj rowMeasure(QualityMeasureRowOriented m) {
        Obj o = new Obj();
        o.put("value", m.isAvailable() ? m.getValue() : Double.NaN);
        o.raw("raw_result_min_max", "[" + num(doubleField(m, "result")) + "," + num(doubleField(m, "minimum")) + ","
                + num(doubleField(m, "maximum")) + "]");
        return o;
    }

    // ---------------------------------------------------------------- classification
    static Obj classification(DataHandle out, String[] features, String target,
                              ARXClassificationConfiguration<?> cfg, Obj params, boolean seedSmile) {
        Obj o = new Obj();
        o.put("params", params);
        long t0 = System.nanoTime();
        try {
            if (seedSmile) smile.math.Math.setSeed(cfg.getSeed());
            StatisticsClassification s = out.getStatistics().getClassificationPerformance(features, target, cfg);
            double secs = (System.nanoTime() - t0) / 1e9;
            o.put("seconds", secs);
            o.put("num_classes", s.getNumClasses());
            o.put("num_measurements", s.getNumMeasurements());
            o.put("accuracy", new Obj().put("zeror", s.getZeroRAccuracy())
                                       .put("original", s.getOriginalAccuracy())
                                       .put("output", s.getAccuracy()));
            o.put("average_error", new Obj().put("zeror", s.getZeroRAverageError())
                                            .put("original", s.getOriginalAverageError())
                                            .put("output", s.getAverageError()));
            o.put("brier", new Obj().put("zeror", s.getZerorBrierScore())
                                    .put("original", s.getOriginalBrierScore())
                                    .put("output", s.getBrierScore())
                                    .put("skill_score", s.getBrierSkillScore()));
            List<String> classes = new ArrayList<>(s.getClassValues());
            Collections.sort(classes);
            Obj auc = new Obj(), brierOvA = new Obj();
            double[] sum = new double[3];
            int n = 0;
            for (String c : classes) {
                StatisticsClassification.ROCCurve z = s.getZeroRROCCurve(c), i = s.getOriginalROCCurve(c), u = s.getROCCurve(c);
                double az = z == null ? Double.NaN : z.getAUC(), ai = i == null ? Double.NaN : i.getAUC(),
                       au = u == null ? Double.NaN : u.getAUC();
                auc.put(c, new Obj().put("zeror", az).put("original", ai).put("output", au));
                brierOvA.put(c, new Obj().put("zeror", z == null ? Double.NaN : z.getBrierScore())
                                         .put("original", i == null ? Double.NaN : i.getBrierScore())
                                         .put("output", u == null ? Double.NaN : u.getBrierScore()));
                sum[0] += az; sum[1] += ai; sum[2] += au; n++;
            }
            o.put("roc_auc_per_class", auc);
            o.put("roc_auc_mean", new Obj().put("zeror", sum[0] / n).put("original", sum[1] / n).put("output", sum[2] / n));
            o.put("brier_one_vs_all_per_class", brierOvA);
        } catch (Throwable t) {
            o.put("seconds", (System.nanoTime() - t0) / 1e9);
            o.put("error", errorOf(t));
        }
        return o;
    }

    // ---------------------------------------------------------------- main
    public static void main(String[] a) throws Exception {
        if (a.length < 6) {
            System.err.println("usage: ArxUtility DATA_DIR SET TARGET K SUPPRESSION OUT_CSV [NUMERIC_COLUMNS]");
            System.exit(2);
        }
        // ARX sets this itself before naive Bayes / random forest; set it first so that SMILE never
        // creates a thread pool and the forest is trained in this thread (seedable, see header).
        System.setProperty("smile.threads", "1");
        String dir = a[0], set = a[1], target = a[2];
        int k = Integer.parseInt(a[3]);
        double suppression = Double.parseDouble(a[4]);
        File outCsv = new File(a[5]);
        Set<String> numeric = new LinkedHashSet<>();
        if (a.length > 6 && !a[6].isEmpty()) numeric.addAll(Arrays.asList(a[6].split(",")));
        boolean seedSmile = !"none".equals(System.getProperty("smile.seed"));

        String stem;
        switch (set) {
            case "adult": stem = "adult"; break;
            case "fars": stem = "fars_int"; break;
            default: throw new IllegalArgumentException("SET must be adult or fars: " + set);
        }
        File csv = new File(dir + "/" + set + "/" + stem + ".csv");

        // Load (as ArxBench does)
        long tl = System.nanoTime();
        Data data = Data.create(csv, StandardCharsets.UTF_8, ';');
        DataDefinition def = data.getDefinition();
        String[] header = cols(csv);
        if (!Arrays.asList(header).contains(target)) throw new IllegalArgumentException("unknown TARGET " + target);
        List<String> qis = new ArrayList<>();
        for (String c : header) {
            File h = new File(dir + "/" + set + "/" + stem + "_hierarchy_" + c + ".csv");
            if (!c.equals(target) && h.exists()) {
                def.setAttributeType(c, Hierarchy.create(h, StandardCharsets.UTF_8, ';'));
                qis.add(c);
            } else {
                def.setAttributeType(c, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
            if (numeric.contains(c)) def.setDataType(c, DataType.INTEGER);
        }
        for (String c : numeric) if (!Arrays.asList(header).contains(c)) throw new IllegalArgumentException("unknown numeric column " + c);
        double loadS = (System.nanoTime() - tl) / 1e9;

        // Anonymize
        ARXConfiguration cfg = ARXConfiguration.create();
        cfg.addPrivacyModel(new KAnonymity(k));
        cfg.setSuppressionLimit(suppression);
        // default quality model: Metric.createLossMetric(); default algorithm: OPTIMAL (Flash)
        ARXAnonymizer anonymizer = new ARXAnonymizer();
        long ta = System.nanoTime();
        ARXResult result = anonymizer.anonymize(data, cfg);
        double anonS = (System.nanoTime() - ta) / 1e9;

        Obj json = new Obj();
        json.put("tool", "arx").put("set", set).put("target", target).put("k", k).put("suppression_limit", suppression);
        StringBuilder nl = new StringBuilder("[");
        for (String c : numeric) nl.append(nl.length() > 1 ? "," : "").append(str(c));
        json.raw("numeric_columns", nl.append("]").toString());
        StringBuilder ql = new StringBuilder("[");
        for (String c : qis) ql.append(ql.length() > 1 ? "," : "").append(str(c));
        json.raw("qis", ql.append("]").toString());
        json.put("metric", cfg.getQualityModel().toString());
        json.put("algorithm", cfg.getAlgorithm().toString());

        ARXLattice.ARXNode opt = result.getGlobalOptimum();
        if (opt == null) {
            json.put("error", "no solution found");
            System.out.println(json);
            return;
        }
        DataHandle out = result.getOutput(false);
        Obj levels = new Obj();
        for (String q : qis) levels.put(q, opt.getGeneralization(q));
        int suppressed = 0;
        for (int r = 0; r < out.getNumRows(); r++) if (out.isOutlier(r)) suppressed++;
        json.put("levels", levels).put("suppressed", suppressed).put("rows", out.getNumRows());
        json.put("loss", opt.getHighestScore().toString());
        json.put("optimum_found", result.getOptimumFound());
        long tw = System.nanoTime();
        out.save(outCsv, ';');
        double writeS = (System.nanoTime() - tw) / 1e9;
        json.put("out_csv", outCsv.getPath());

        // Quality
        long tq = System.nanoTime();
        Obj quality = new Obj();
        try {
            StatisticsQuality q = out.getStatistics().getQualityStatistics();
            List<String> attrs = q.getAttributes();
            Obj types = new Obj();
            for (String c : attrs) types.put(c, q.getDataType(c) == null ? null : q.getDataType(c).getDescription().getLabel());
            quality.put("output_data_types", types);
            quality.put("granularity", columnMeasure(q.getGranularity(), attrs));
            quality.put("non_uniform_entropy", columnMeasure(q.getNonUniformEntropy(), attrs));
            quality.put("attribute_level_squared_error", columnMeasure(q.getAttributeLevelSquaredError(), attrs));
            quality.put("generalization_intensity", columnMeasure(q.getGeneralizationIntensity(), attrs));
            quality.put("missings", columnMeasure(q.getMissings(), attrs));
            quality.put("ambiguity", rowMeasure(q.getAmbiguity()));
            quality.put("aecs", rowMeasure(q.getAverageClassSize()));
            quality.put("sse_sst", rowMeasure(q.getSSESST()));
            quality.put("record_level_squared_error", rowMeasure(q.getRecordLevelSquaredError()));
            quality.put("discernibility", rowMeasure(q.getDiscernibility()));
        } catch (Throwable t) {
            quality.put("error", errorOf(t));
        }
        double qualityS = (System.nanoTime() - tq) / 1e9;
        json.put("quality", quality);

        // Classification
        String[] features = qis.toArray(new String[0]);
        ClassificationConfigurationLogisticRegression lr = ARXClassificationConfiguration.createLogisticRegression();
        ClassificationConfigurationNaiveBayes nb = ARXClassificationConfiguration.createNaiveBayes();
        ClassificationConfigurationRandomForest rf = ARXClassificationConfiguration.createRandomForest();
        // ARX's defaults are already deterministic with seed Integer.MAX_VALUE; state them explicitly.
        lr.setDeterministic(true); lr.setSeed(Integer.MAX_VALUE);
        nb.setDeterministic(true); nb.setSeed(Integer.MAX_VALUE);
        rf.setDeterministic(true); rf.setSeed(Integer.MAX_VALUE);
        String maxRecords = System.getProperty("max.records");
        if (maxRecords != null) {
            int m = Integer.parseInt(maxRecords);
            lr.setMaxRecords(m); nb.setMaxRecords(m); rf.setMaxRecords(m);
        }
        Set<String> models = new HashSet<>(Arrays.asList(System.getProperty("models", "lr,nb,rf").split(",")));
        int numSamples = Math.min(out.getNumRows(), lr.getMaxRecords());
        Obj protocol = new Obj()
            .put("folds", lr.getNumFolds())
            .put("max_records", lr.getMaxRecords())
            .put("records_used", numSamples)
            .put("seed", lr.getSeed())
            .put("deterministic", lr.isDeterministic())
            .put("seed_fixed", lr.isDeterministic())
            .put("smile_random_forest_seeded_by_harness", seedSmile)
            .put("sampling", "all row indices shuffled with java.util.Random(seed) (Collections.shuffle), first min(rows, max_records) kept, "
                 + "cut into `folds` consecutive folds of floor(n/folds) rows (last fold takes the rest); same folds for every model; "
                 + "each fold is the test set once, the other folds train")
            .put("feature_encoding", "features = the QIs, all categorical (the 3-argument call passes no ARXFeatureScaling, so even INTEGER columns "
                 + "are not numeric); LR and NB: Mahout StaticWordValueEncoder hashes the token 'Attribute-<col>:<value>' (weight 1) plus an "
                 + "intercept into a dense vector of length " + lr.getVectorLength() + " (feature hashing, collisions possible); "
                 + "RF: one double per feature = the value's dictionary code in the handle (an arbitrary ordinal), SMILE RandomForest")
            .put("original", "model trained on the INPUT (original) feature values of the training folds (all rows), class from the data; "
                 + "tested on the input feature values of the test fold")
            .put("output", "model trained on the OUTPUT (released, generalized) feature values of the training-fold rows that are NOT "
                 + "suppressed; tested on the output values of ALL test-fold rows, read with ignoreSuppression=true, i.e. a suppressed "
                 + "test record is classified with its generalized (pre-suppression) values, not with '*'")
            .put("zeror", "majority class of the training folds (class counts of all training rows); confidences = class frequencies")
            .put("truth", "class value of the test record (the target is an insensitive attribute, identical in input and output)")
            .put("accuracy", "share of test records whose arg-max class equals the true class, over all folds")
            .put("brier", "multi-class: mean over test records of sum over classes (p_c - [c = true])^2 (StatisticsClassification.calculateBrierScore)")
            .put("brier_one_vs_all", "ROCCurve.getBrierScore: (p_c - [c = true])^2 summed over test records with an unambiguous arg-max, divided by all test records")
            .put("roc_auc", "one-vs-all per class: records sorted by the class's confidence, trapezoidal area under (FPR, TPR); NaN reported as 0 by ARX; "
                 + "ties are not averaged (order after a stable sort), so ZeroR's constant confidences give an order-dependent value near 0.5");
        json.put("protocol", protocol);

        long tc = System.nanoTime();
        Obj cls = new Obj();
        if (models.contains("lr")) cls.put("logistic_regression", classification(out, features, target, lr, new Obj()
                .put("prior", lr.getPriorFunction().toString()).put("alpha", lr.getAlpha()).put("lambda", lr.getLambda())
                .put("learning_rate", lr.getLearningRate()).put("decay_exponent", lr.getDecayExponent())
                .put("step_offset", lr.getStepOffset()).put("vector_length", lr.getVectorLength()), seedSmile));
        if (models.contains("nb")) cls.put("naive_bayes", classification(out, features, target, nb, new Obj()
                .put("type", nb.getType().toString()).put("sigma", nb.getSigma()).put("vector_length", nb.getVectorLength()), seedSmile));
        if (models.contains("rf")) cls.put("random_forest", classification(out, features, target, rf, new Obj()
                .put("trees", rf.getNumberOfTrees()).put("variables_to_split", rf.getNumberOfVariablesToSplit())
                .put("min_leaf_size", rf.getMinimumSizeOfLeafNodes()).put("max_leaf_nodes", rf.getMaximumNumberOfLeafNodes())
                .put("subsample", rf.getSubsample()).put("split_rule", rf.getSplitRule().toString()), seedSmile));
        double classS = (System.nanoTime() - tc) / 1e9;
        json.put("classification", cls);

        json.put("seconds", new Obj().put("load", loadS).put("anonymize", anonS).put("write", writeS)
                                     .put("quality", qualityS).put("classification", classS));
        System.out.println(json);
    }
}
