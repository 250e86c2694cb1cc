"""Asks DuckDB the export's questions: reads `heapgraph export`'s Parquet folder the way
docs/sql.md says (read_parquet over each table's glob, hive_partitioning) and prints one JSON
object with the answers, which tests/e2e/export.rs compares with the CLI's own JSON.

    python3 tests/oracle/duckdb_export.py EXPORT_DIR

Keys: `dumps` (every row of the dumps table, by file), `types` (per file and type: count,
shallow, retained, from the types table), `objects_per_kind_and_type` (per file, objects
counted over the objects table by `kind/type`), `object_rows` and `reference_rows` (per file),
`holders` (per file and signature: objects, retained), and `fleet`, the three fleet questions:
objects of each type per label, the holder that grew most between two labels, the totals per
label.
"""
import json
import os
import sys

import duckdb


def main():
    root = sys.argv[1]
    db = duckdb.connect()
    for table in ("dumps", "objects", "references", "types", "holders", "findings", "roots",
                  "sites", "gpu_blocks"):
        pattern = os.path.join(root, table, "*", "*.parquet")
        db.execute(
            f"CREATE VIEW \"{table}\" AS SELECT * FROM read_parquet('{pattern}', "
            "hive_partitioning = true)")
    out = {"duckdb": duckdb.__version__}
    columns = [c[0] for c in db.execute("SELECT * FROM dumps LIMIT 0").description]
    out["dumps"] = {}
    for row in db.execute("SELECT * FROM dumps").fetchall():
        record = dict(zip(columns, row))
        record["captured_at"] = None if record["captured_at"] is None else str(record["captured_at"])
        out["dumps"][record["file"]] = record

    def per_file(sql):
        result = {}
        for file, key, *values in db.execute(sql).fetchall():
            result.setdefault(file, {})[key] = values if len(values) > 1 else values[0]
        return result

    out["types"] = per_file(
        "SELECT d.file, t.type, t.count, t.shallow_size, t.retained_size "
        "FROM types t JOIN dumps d USING (dump_id)")
    out["objects_per_kind_and_type"] = per_file(
        "SELECT d.file, o.kind || '/' || o.type, count(*) FROM objects o "
        "JOIN dumps d USING (dump_id) GROUP BY ALL")
    out["object_rows"] = dict(db.execute(
        "SELECT d.file, count(*) FROM objects o JOIN dumps d USING (dump_id) GROUP BY ALL"
    ).fetchall())
    out["reference_rows"] = dict(db.execute(
        "SELECT d.file, count(*) FROM \"references\" r JOIN dumps d USING (dump_id) GROUP BY ALL"
    ).fetchall())
    out["holders"] = per_file(
        "SELECT d.file, h.signature, h.objects, h.retained_size "
        "FROM holders h JOIN dumps d USING (dump_id)")

    # The fleet questions, as an analyst would ask them of a fleet's export.
    fleet = {}
    # 1. Objects of each type per label (release), summed over the dumps of that label.
    fleet["objects_per_type"] = [list(row) for row in db.execute(
        "SELECT d.label, t.type, sum(t.count)::BIGINT FROM types t JOIN dumps d USING (dump_id) "
        "GROUP BY ALL ORDER BY ALL").fetchall()]
    # 2. The holder of many objects (a container's entries) whose average retained size grew
    #    most from one release to the other, over the dumps taken after the growth phase.
    fleet["holder_growth"] = [list(row) for row in db.execute(
        "SELECT h.signature, "
        "  coalesce(avg(h.retained_size) FILTER (WHERE d.label LIKE 'release=leaky%'), 0) "
        "- coalesce(avg(h.retained_size) FILTER (WHERE d.label LIKE 'release=fixed%'), 0) AS growth "
        "FROM holders h JOIN dumps d USING (dump_id) "
        "WHERE d.label LIKE '%phase=after%' AND h.objects > 1 "
        "GROUP BY h.signature ORDER BY growth DESC, h.signature LIMIT 5").fetchall()]
    # 3. The totals per label.
    fleet["totals"] = [list(row) for row in db.execute(
        "SELECT label, count(*), sum(objects)::BIGINT, sum(total_shallow_size)::BIGINT, "
        "sum(reachable_size)::BIGINT FROM dumps GROUP BY label ORDER BY label").fetchall()]
    out["fleet"] = fleet
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
