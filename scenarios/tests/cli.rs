//! The `sim` CLI end to end (simulation mode): `shrink` finds the two faults KAFKA-13563
//! needs, `replay` reproduces a saved regression, `explore` ends with its summary table and a
//! repro line per failure (and, per shard, JSON lines that `merge` sums up), `overshoot`
//! tabulates both subjects' polls.
#![cfg(madsim)]

use std::process::Command;

fn sim(args: &[&str], dir: &std::path::Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn shrink_keeps_the_restart_and_the_second_move() {
    let dir = scratch("shrink");
    let (code, out) = sim(&["shrink", "kafka-13563", "--seed", "1"], &dir);
    assert_eq!(code, 0, "{out}");
    let plan = std::fs::read_to_string(dir.join("shrunk-kafka-13563-seed-1.plan")).unwrap();
    let faults = sim::fault::text::parse_plan(&plan).unwrap();
    assert_eq!(faults.len(), 2, "{plan}");
    assert!(plan.contains("restart-broker 1"), "{plan}");
    assert!(plan.contains("move-coordinator 0 to=any"), "{plan}");
    assert!(
        out.contains(
            "repro: cargo sim run kafka-13563 --seed 1 --subject legacy --plan shrunk-kafka-13563-seed-1.plan"
        ),
        "{out}"
    );
    // The shrunk plan still fails the same way when run from its file.
    let (code, out) = sim(
        &[
            "run",
            "kafka-13563",
            "--seed",
            "1",
            "--plan",
            "shrunk-kafka-13563-seed-1.plan",
        ],
        &dir,
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("first violation [coordinator-rediscovery]"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn replay_reproduces_a_saved_regression_and_shows_where() {
    let dir = scratch("replay");
    let (code, out) = sim(&["replay", "kafka-13563-legacy-seed-1"], &dir);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("fault plan: as saved"), "{out}");
    assert!(out.contains("-> reproduced"), "{out}");
    assert!(out.contains("where it went wrong"), "{out}");
    assert!(out.contains("err=COORDINATOR_NOT_AVAILABLE"), "{out}");
    let (code, out) = sim(&["replay", "no-such-regression"], &dir);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("kafka-13310-legacy-seed-1"),
        "lists what is saved: {out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn explore_prints_progress_summary_and_repro_lines() {
    let dir = scratch("explore");
    let (code, out) = sim(
        &[
            "explore",
            "kafka-10337",
            "--seeds",
            "2",
            "--subject",
            "legacy",
        ],
        &dir,
    );
    assert_eq!(code, 1, "the legacy model fails KAFKA-10337: {out}");
    assert!(out.contains("2/2 seeds"), "progress: {out}");
    assert!(out.contains("seeds/minute"), "{out}");
    assert!(
        out.contains("cargo sim run kafka-10337 --seed 0 --subject legacy"),
        "{out}"
    );
    assert!(
        out.contains("cargo sim run kafka-10337 --seed 1 --subject legacy"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `explore --json/--junit` per shard, and `merge` of the shards' JSON lines: one summary over
/// every seed, one JUnit report with a failure per failing seed, the exit code of the whole.
#[test]
fn explore_shards_write_json_lines_that_merge_into_one_report() {
    let dir = scratch("merge");
    for shard in ["0/2", "1/2"] {
        let json = format!("shard-{}.jsonl", &shard[..1]);
        let (code, out) = sim(
            &[
                "explore",
                "kafka-10337",
                "--seeds",
                "3",
                "--subject",
                "legacy",
                "--shard",
                shard,
                "--json",
                &json,
            ],
            &dir,
        );
        assert_eq!(code, 1, "{out}");
    }
    let shard0 = std::fs::read_to_string(dir.join("shard-0.jsonl")).unwrap();
    assert_eq!(shard0.lines().count(), 2, "seeds 0 and 2: {shard0}");
    assert!(shard0.contains("\"verdict\":\"fail\""), "{shard0}");
    let (code, out) = sim(
        &[
            "merge",
            "shard-0.jsonl",
            "shard-1.jsonl",
            "--junit",
            "all.xml",
        ],
        &dir,
    );
    assert_eq!(code, 1, "the merged run failed as its shards did: {out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("kafka-10337") && l.contains("legacy      3         3")),
        "{out}"
    );
    let xml = std::fs::read_to_string(dir.join("all.xml")).unwrap();
    assert!(xml.contains("tests=\"3\" failures=\"3\""), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 3, "{xml}");
    let (code, out) = sim(&["merge", "missing.jsonl"], &dir);
    assert_eq!(code, 2, "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `overshoot` measures the legacy model's KAFKA-13310 block (its `poll(100ms)` held ~15 s by
/// the synchronous commit retried in `onJoinPrepare`) and our consumer's bounded polls, on the
/// same seed.
#[test]
fn overshoot_puts_the_legacy_block_beside_our_bounded_polls() {
    let dir = scratch("overshoot");
    let (code, out) = sim(&["overshoot", "kafka-13310", "--seeds", "1"], &dir);
    assert_eq!(code, 0, "{out}");
    let row = |subject: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.starts_with("kafka-13310") && l.split_whitespace().nth(1) == Some(subject))
            .unwrap_or_else(|| panic!("no {subject} row in {out}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let (legacy, ours) = (row("legacy"), row("consumer"));
    let late = |r: &[String]| r[4].parse::<u64>().unwrap();
    let max_ms = |r: &[String]| r[6].parse::<u64>().unwrap();
    assert!(late(&legacy) >= 1, "{out}");
    assert!(max_ms(&legacy) > 10_000, "{out}");
    assert_eq!(late(&ours), 0, "{out}");
    assert!(max_ms(&ours) <= 50, "{out}");
}

/// `sabotage`: the catalogue lists every entry; `run --sabotage` puts one bug back (KAFKA-14196's
/// reconciliation started without an acknowledged poll) and the scenario built for it fails,
/// while the same seed passes unsabotaged; the search names the scenario that caught it; an
/// unknown name is refused.
#[test]
fn sabotage_puts_a_bug_back_and_the_search_names_what_caught_it() {
    let dir = scratch("sabotage");
    let (code, out) = sim(&["sabotage", "--list"], &dir);
    assert_eq!(code, 0, "{out}");
    for sabotage in kafka_consumer::sabotage::Sabotage::ALL {
        assert!(out.contains(sabotage.name()), "{out}");
    }
    let run = |sabotage: Option<&str>| {
        let mut args = vec!["run", "kafka-14196", "--seed", "0", "--subject", "consumer"];
        args.extend(sabotage.map(|s| ["--sabotage", s]).into_iter().flatten());
        sim(&args, &dir)
    };
    let (code, out) = run(None);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(Some("reconcile-without-poll"));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("sabotage reconcile-without-poll (KAFKA-14196)"),
        "{out}"
    );
    assert!(out.contains("handover-without-redelivery"), "{out}");
    let (code, out) = sim(
        &[
            "sabotage",
            "reconcile-without-poll",
            "--seeds",
            "1",
            "--scenarios",
            "kafka-10337,kafka-14196",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("reconcile-without-poll"))
        .unwrap_or_else(|| panic!("no row in {out}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&columns[2..5], ["kafka-14196", "0", "2"], "{row}");
    let (code, out) = sim(&["sabotage", "no-such-bug", "--seeds", "1"], &dir);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no sabotage `no-such-bug`"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}
