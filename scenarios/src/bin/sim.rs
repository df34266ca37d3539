//! `cargo sim list | run | explore | overshoot | replay | shrink | sabotage`: the scenarios CLI. It runs in simulation mode only (the
//! `cargo sim` alias builds with `--cfg madsim`).

use std::process::ExitCode;

#[cfg(not(madsim))]
fn main() -> ExitCode {
    eprintln!("the scenarios CLI runs in simulation mode: use `cargo sim list|run|explore`");
    ExitCode::from(2)
}

#[cfg(madsim)]
fn main() -> ExitCode {
    // `SIM_LOG=kafka_consumer=debug cargo sim run ...`: the consumers' and brokers' logs on
    // stderr, on virtual time, each line in the span of the node that wrote it.
    if let Ok(filter) = std::env::var("SIM_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match cli::main(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{message}");
            eprintln!("{}", cli::USAGE);
            ExitCode::from(2)
        }
    }
}

#[cfg(madsim)]
mod cli {
    use std::collections::{BTreeMap, BTreeSet};
    use std::process::ExitCode;

    use kafka_consumer::sabotage::Sabotage;
    use scenarios::explore_report::{junit, read_json_lines, summarize, SeedResult, Verdict};
    use scenarios::runner::{repro_line, run_in_runtime, run_in_runtime_with_plan, RunResult};
    use scenarios::subject::SubjectKind;
    use sim::fault::text::{parse_plan, plan_to_string};

    pub const USAGE: &str = "usage:
  cargo sim list
  cargo sim run SCENARIO --seed N [--subject legacy|consumer] [--history|--golden] [--plan FILE] [--trace FILE.html|FILE.json] [--overshoot] [--virtual-end] [--sabotage NAME]
  cargo sim shrink SCENARIO --seed N [--subject legacy|consumer]
  cargo sim explore SCENARIO|--all --seeds N [--start S] [--subject consumer|legacy] [--jobs J] [--shard I/N] [--json FILE] [--junit FILE]
  cargo sim merge FILE... [--junit FILE]    (JSON lines of explore runs, e.g. one per shard)
  cargo sim overshoot SCENARIO|--all --seeds N [--start S] [--jobs J] [--shard I/N]
  cargo sim replay REGRESSION    (a file of regressions/saved/, with or without .regression,
                                 or a scenario's name: every regression saved of it)
  cargo sim sabotage --list | --witnesses [--jobs J] | NAME...|--all --seeds N [--start S] [--jobs J] [--scenarios A,B]";

    /// `--name value` options and bare flags after the positional arguments.
    struct Options<'a> {
        positional: Vec<&'a str>,
        named: Vec<(&'a str, Option<&'a str>)>,
    }

    impl<'a> Options<'a> {
        fn parse(args: &'a [String]) -> Self {
            let mut positional = Vec::new();
            let mut named = Vec::new();
            let mut i = 0;
            while i < args.len() {
                let arg = args[i].as_str();
                if let Some(name) = arg.strip_prefix("--") {
                    let value = args
                        .get(i + 1)
                        .map(String::as_str)
                        .filter(|v| !v.starts_with("--"));
                    i += 1 + usize::from(value.is_some());
                    named.push((name, value));
                } else {
                    positional.push(arg);
                    i += 1;
                }
            }
            Self { positional, named }
        }

        fn flag(&self, name: &str) -> bool {
            self.named.iter().any(|(n, _)| *n == name)
        }

        fn value<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
            match self.named.iter().find(|(n, _)| *n == name) {
                None => Ok(None),
                Some((_, None)) => Err(format!("--{name} needs a value")),
                Some((_, Some(v))) => v
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("invalid --{name} `{v}`")),
            }
        }

        fn subject(&self) -> Result<SubjectKind, String> {
            Ok(self
                .value::<SubjectKind>("subject")?
                .unwrap_or(SubjectKind::Legacy))
        }
    }

    pub fn main(args: &[String]) -> Result<ExitCode, String> {
        let options = Options::parse(args);
        match options.positional.first().copied() {
            Some("list") => {
                for info in scenarios::registry() {
                    println!("{:<14} {}", info.name, (info.build)().summary);
                }
                Ok(ExitCode::SUCCESS)
            }
            Some("run") => run(&options),
            Some("explore") => explore(&options),
            Some("merge") => merge(&options),
            Some("overshoot") => overshoot(&options),
            Some("replay") => replay(&options),
            Some("shrink") => shrink(&options),
            Some("sabotage") => sabotage(&options),
            Some(other) => Err(format!("unknown command `{other}`")),
            None => Err("no command".to_owned()),
        }
    }

    fn scenario(options: &Options<'_>) -> Result<&'static scenarios::ScenarioInfo, String> {
        let name = options
            .positional
            .get(1)
            .ok_or_else(|| "which scenario? (cargo sim list)".to_owned())?;
        scenarios::find(name).ok_or_else(|| format!("no scenario `{name}` (cargo sim list)"))
    }

    fn run(options: &Options<'_>) -> Result<ExitCode, String> {
        let info = scenario(options)?;
        let seed: u64 = options.value("seed")?.ok_or("--seed N is required")?;
        let subject = options.subject()?;
        let sabotage = match options.value::<String>("sabotage")? {
            None => None,
            Some(name) => Some(
                Sabotage::from_name(&name)
                    .ok_or_else(|| format!("no sabotage `{name}` (cargo sim sabotage --list)"))?,
            ),
        };
        kafka_consumer::sabotage::activate(sabotage);
        let plan_file = options.value::<String>("plan")?;
        let plan = match &plan_file {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
                Some(parse_plan(&text).map_err(|e| format!("{path}: {e}"))?)
            }
        };
        let result =
            run_in_runtime_with_plan(info.build, seed, subject, plan).map_err(|e| e.to_string())?;
        println!("scenario {}  seed {seed}  subject {subject}", info.name);
        if let Some(sabotage) = sabotage {
            println!("sabotage {} ({})", sabotage.name(), sabotage.origin());
        }
        println!(
            "fault plan{}:",
            plan_file
                .as_ref()
                .map_or(String::new(), |p| format!(" (from {p})"))
        );
        for (at_ms, fault) in &result.plan {
            println!("  {at_ms:>7}ms {fault:?}");
        }
        if options.flag("history") {
            print!("{}", result.history.render());
        }
        if options.flag("golden") {
            print!("{}", scenarios::golden::domain_trace(&result.history));
        }
        print!("{}", result.report);
        if options.flag("overshoot") {
            println!("{}", overshoot_line(&result.history));
        }
        if options.flag("virtual-end") {
            // What `scenarios/virtual-wall.sh` reads, without printing the whole history.
            println!("virtual end: {}ms", result.history.end_ms());
        }
        if let Some(path) = options.value::<String>("trace")? {
            let title = format!("{} seed {seed} subject {subject}", info.name);
            let (page, what) = if path.ends_with(".json") {
                let json = scenarios::trace_events::render(&title, &result.history, &result.report);
                (json, "trace (Perfetto UI, chrome://tracing)")
            } else {
                let html = scenarios::timeline::render(&title, &result.history, &result.report);
                (html, "timeline")
            };
            std::fs::write(&path, page).map_err(|e| format!("{path}: {e}"))?;
            println!("{what}: {path}");
        }
        print_verdict(&result, plan_file.as_deref());
        Ok(if result.report.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }

    fn print_verdict(result: &RunResult, plan_file: Option<&str>) {
        match result.report.first_violation() {
            None => println!("verdict: PASS"),
            Some((checker, violation)) => {
                let failed: Vec<&str> = result
                    .report
                    .verdicts
                    .iter()
                    .filter(|v| !v.is_ok())
                    .map(|v| v.checker)
                    .collect();
                println!("verdict: FAIL ({})", failed.join(", "));
                println!("first violation [{checker}]: {violation}");
            }
        }
        match plan_file {
            None => println!("repro: {}", result.repro()),
            Some(p) => println!("repro: {} --plan {p}", result.repro()),
        }
    }

    /// Finds a saved regression by path, file name or stem.
    /// The saved regressions `name` stands for: a file (of `regressions/saved/`, with or
    /// without `.regression`), or else a scenario's name, for every regression saved of it.
    fn regression_files(name: &str) -> Result<Vec<(String, String)>, String> {
        let dir = scenarios::regression::saved_dir();
        let candidates = [
            std::path::PathBuf::from(name),
            dir.join(name),
            dir.join(format!("{name}.regression")),
        ];
        if let Some(path) = candidates.iter().find(|p| p.is_file()) {
            let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
            return Ok(vec![(path.display().to_string(), text)]);
        }
        let mut saved: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "regression"))
            .collect();
        saved.sort();
        let mut of_scenario = Vec::new();
        for path in &saved {
            let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
            let is_of_scenario =
                scenarios::regression::Regression::parse(&text).is_ok_and(|r| r.scenario == name);
            if is_of_scenario {
                of_scenario.push((path.display().to_string(), text));
            }
        }
        if !of_scenario.is_empty() {
            return Ok(of_scenario);
        }
        let known: Vec<String> = saved
            .iter()
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        let what = if scenarios::find(name).is_some() {
            format!("scenario `{name}` has no saved regression")
        } else {
            format!("no regression or scenario `{name}`")
        };
        Err(format!("{what}; saved: {}", known.join(", ")))
    }

    /// `replay REGRESSION|SCENARIO`: replays one saved regression, or every one saved of a
    /// scenario; fails unless each reproduces.
    fn replay(options: &Options<'_>) -> Result<ExitCode, String> {
        let name = options
            .positional
            .get(1)
            .ok_or("which regression? (a file of regressions/saved/, or a scenario's name)")?;
        let mut code = ExitCode::SUCCESS;
        for (path, text) in regression_files(name)? {
            if replay_one(&path, &text)? != ExitCode::SUCCESS {
                code = ExitCode::FAILURE;
            }
        }
        Ok(code)
    }

    /// Reruns a saved seed, compares plan and verdict, and shows where the
    /// run went wrong (the failing member's own events before the first violation).
    fn replay_one(path: &str, text: &str) -> Result<ExitCode, String> {
        let r =
            scenarios::regression::Regression::parse(text).map_err(|e| format!("{path}: {e}"))?;
        let info = scenarios::find(&r.scenario)
            .ok_or_else(|| format!("{path}: no scenario `{}`", r.scenario))?;
        let subject: SubjectKind = r.subject.parse()?;
        let result = run_in_runtime(info.build, r.seed, subject).map_err(|e| e.to_string())?;
        println!("regression {path}");
        println!(
            "scenario {}  seed {}  subject {}  (saved at {})",
            r.scenario, r.seed, r.subject, r.commit
        );
        let plan: Vec<String> = result
            .plan
            .iter()
            .map(|(at_ms, fault)| format!("{at_ms} {fault:?}"))
            .collect();
        let same_plan = plan == r.plan;
        println!(
            "fault plan: {}",
            if same_plan {
                "as saved"
            } else {
                "DIFFERS from the saved one"
            }
        );
        for line in &plan {
            println!("  {line}");
        }
        let reproduced = same_plan && r.reproduced_by(&result.report);
        println!(
            "{subject} verdict: {} (expected: {}) -> {}",
            if result.report.is_ok() {
                "PASS"
            } else {
                "FAIL"
            },
            r.expect,
            if reproduced {
                "reproduced"
            } else {
                "NOT reproduced"
            }
        );
        if let Some((checker, v)) = result.report.first_violation() {
            println!("first violation [{checker}]: {v}");
            let who = v.subject.clone();
            let from = v.at_ms.saturating_sub(6_000);
            let lines: Vec<String> = result
                .history
                .entries()
                .iter()
                .filter(|e| e.at_ms >= from && e.at_ms <= v.at_ms)
                .filter(|e| who.as_deref().is_none_or(|w| e.subject == w) || e.subject == "faults")
                .filter(|e| {
                    !matches!(
                        e.event,
                        sim::history::Event::Delivered { .. }
                            | sim::history::Event::PollStart { .. }
                            | sim::history::Event::ProduceAcked { .. }
                    ) && !matches!(&e.event, sim::history::Event::PollEnd { error: None, .. })
                        && !matches!(&e.event, sim::history::Event::Request { api, .. }
                            | sim::history::Event::Response { api, .. }
                            if api == "Fetch" || api == "Metadata")
                })
                .map(|e| e.to_string())
                .collect();
            println!(
                "where it went wrong ({} events of {} before the violation, last 30):",
                lines.len(),
                who.as_deref().unwrap_or("every member")
            );
            for line in lines.iter().skip(lines.len().saturating_sub(30)) {
                println!("  {line}");
            }
        }
        if subject == SubjectKind::Legacy {
            match run_in_runtime(info.build, r.seed, SubjectKind::Consumer) {
                Ok(ours) => println!(
                    "consumer verdict: {}",
                    if ours.report.is_ok() { "PASS" } else { "FAIL" }
                ),
                Err(e) => println!("consumer verdict: n/a ({e})"),
            }
        }
        let stem = std::path::Path::new(path)
            .file_stem()
            .map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned());
        println!("repro: cargo sim replay {stem}");
        Ok(if reproduced {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }

    /// `checker` and violation kind of a `first violation [checker]:  123ms Kind …` line.
    fn verdict_key(first: &str) -> Option<(String, String)> {
        let rest = first.strip_prefix('[')?;
        let (checker, rest) = rest.split_once(']')?;
        let kind = rest
            .split_whitespace()
            .skip_while(|w| !w.ends_with("ms"))
            .nth(1)?;
        Some((checker.to_owned(), kind.to_owned()))
    }

    /// Runs one seed with `plan` in a child process (see [`run_seed_in_child`]).
    fn run_plan_in_child(
        scenario: &str,
        seed: u64,
        subject: SubjectKind,
        plan: &sim::fault::FaultPlan,
        file: &std::path::Path,
    ) -> Result<Outcome, String> {
        std::fs::write(file, plan_to_string(plan)).map_err(|e| e.to_string())?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let output = std::process::Command::new(exe)
            .args(["run", scenario, "--seed", &seed.to_string(), "--subject"])
            .arg(subject.name())
            .arg("--plan")
            .arg(file)
            .output()
            .map_err(|e| e.to_string())?;
        outcome(output)
    }

    /// `shrink SCENARIO --seed N`: delta-debugs the seed's fault plan (`sim::shrink::ddmin`) to
    /// a 1-minimal one that still breaks the same invariant (same checker, same kind), each
    /// candidate replayed in a fresh process; writes it as text and prints its repro line.
    fn shrink(options: &Options<'_>) -> Result<ExitCode, String> {
        let info = scenario(options)?;
        let seed: u64 = options.value("seed")?.ok_or("--seed N is required")?;
        let subject = options.subject()?;
        let plan = (info.build)().plan(seed).plan;
        let file = std::env::temp_dir().join(format!(
            "sim-shrink-{}-{seed}-{}.plan",
            info.name,
            std::process::id()
        ));
        let first = match run_plan_in_child(info.name, seed, subject, &plan, &file)? {
            Outcome::Pass => {
                println!(
                    "{} seed {seed} passes with its plan: nothing to shrink",
                    info.name
                );
                return Ok(ExitCode::SUCCESS);
            }
            Outcome::Fail(first, _) => first,
        };
        let key = verdict_key(&first).ok_or_else(|| format!("cannot read `{first}`"))?;
        println!("{} seed {seed} fails: {first}", info.name);
        println!(
            "shrinking {} fault(s), keeping {} {} ...",
            plan.len(),
            key.0,
            key.1
        );
        let mut replays = 0;
        let mut error = None;
        let minimal = sim::shrink::ddmin(&plan, |candidate| {
            replays += 1;
            match run_plan_in_child(info.name, seed, subject, &candidate.to_vec(), &file) {
                Ok(Outcome::Fail(f, _)) => verdict_key(&f).as_ref() == Some(&key),
                Ok(Outcome::Pass) => false,
                Err(e) => {
                    error.get_or_insert(e);
                    false
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        let out = format!("shrunk-{}-seed-{seed}.plan", info.name);
        std::fs::write(&out, plan_to_string(&minimal)).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&file);
        println!(
            "minimal plan ({} of {} fault(s), {replays} replays), written to {out}:",
            minimal.len(),
            plan.len()
        );
        print!("{}", plan_to_string(&minimal));
        println!(
            "repro: {} --plan {out}",
            repro_line(info.name, seed, subject)
        );
        Ok(ExitCode::SUCCESS)
    }

    /// `--seeds N [--start S] [--shard I/N]` and `--jobs J`: this shard's seeds of `S..S+N`, and
    /// how many run at once.
    fn seeds_and_jobs(options: &Options<'_>) -> Result<(Vec<u64>, usize), String> {
        let seeds: u64 = options.value("seeds")?.ok_or("--seeds N is required")?;
        let start: u64 = options.value("start")?.unwrap_or(0);
        let jobs: usize = options.value("jobs")?.unwrap_or(1);
        if jobs == 0 {
            return Err("--jobs must be at least 1".to_owned());
        }
        let (index, count) = shard(options)?;
        let mine = (start..start + seeds)
            .filter(|s| s % count == index)
            .collect();
        Ok((mine, jobs))
    }

    /// `--shard I/N`: this shard takes the seeds with `seed % N == I`.
    fn shard(options: &Options<'_>) -> Result<(u64, u64), String> {
        let Some(text) = options.value::<String>("shard")? else {
            return Ok((0, 1));
        };
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)))
            .filter(|(i, n): &(u64, u64)| *n > 0 && i < n);
        parsed.ok_or_else(|| format!("invalid --shard `{text}`: expected I/N with I < N"))
    }

    /// What one seed of `explore` concluded.
    enum Outcome {
        Pass,
        /// The first violation's line and every failing checker.
        Fail(String, Vec<String>),
    }

    /// Runs one seed as `sim run` in a child process. In one process, a seed run after another
    /// may not replay under its own repro line: unbiased `tokio::select!` draws from an RNG tokio
    /// seeds with a process-global counter. A fresh process per seed keeps every repro exact.
    fn run_seed_in_child(
        scenario: &str,
        seed: u64,
        subject: SubjectKind,
    ) -> Result<Outcome, String> {
        run_sabotaged_in_child(scenario, seed, subject, None)
    }

    /// [`run_seed_in_child`] with the consumer sabotaged.
    fn run_sabotaged_in_child(
        scenario: &str,
        seed: u64,
        subject: SubjectKind,
        sabotage: Option<Sabotage>,
    ) -> Result<Outcome, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut command = std::process::Command::new(exe);
        command
            .args(["run", scenario, "--seed", &seed.to_string(), "--subject"])
            .arg(subject.name());
        if let Some(sabotage) = sabotage {
            command.args(["--sabotage", sabotage.name()]);
        }
        outcome(command.output().map_err(|e| e.to_string())?)
    }

    fn outcome(output: std::process::Output) -> Result<Outcome, String> {
        let stdout = String::from_utf8_lossy(&output.stdout);
        match output.status.code() {
            Some(0) => Ok(Outcome::Pass),
            Some(1) => Ok(Outcome::Fail(
                stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("first violation "))
                    .unwrap_or("(no violation line)")
                    .to_owned(),
                stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("verdict: FAIL ("))
                    .and_then(|l| l.strip_suffix(')'))
                    .map(|l| l.split(", ").map(str::to_owned).collect())
                    .unwrap_or_default(),
            )),
            _ => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        }
    }

    /// The progress bar on stderr: `[=====     ]  37/200 seeds  2 failed  41.3 seeds/min`,
    /// redrawn in place on a terminal; in a log (CI) one line per tenth of the seeds instead,
    /// so the log does not fill with carriage-return redraws.
    fn progress(done: u64, total: u64, failed: usize, elapsed: std::time::Duration) {
        use std::io::IsTerminal;
        const WIDTH: u64 = 30;
        let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
        let rate = done as f64 / (elapsed.as_secs_f64() / 60.0).max(1e-9);
        let bar = format!(
            "[{}{}] {done:>5}/{total} seeds  {failed} failed  {rate:.1} seeds/min",
            "=".repeat(filled as usize),
            " ".repeat((WIDTH - filled) as usize)
        );
        if std::io::stderr().is_terminal() {
            eprint!("\r{bar}");
        } else {
            let tenth = (total / 10).max(1);
            if done % tenth == 0 || done == total {
                eprintln!("{bar}");
            }
        }
    }

    /// What `explore` found for one scenario: every seed's result (a failure is known when a
    /// saved regression of that seed already records every checker that failed,
    /// `regression::known_consumer_failures`) and the minutes it took.
    struct Explored {
        results: Vec<SeedResult>,
        minutes: f64,
    }

    /// Runs `run` for every seed, `jobs` at a time (each call waits for its own child
    /// process), with a progress bar counting the results `failed` marks; returns the results
    /// in seed order and the minutes it took.
    fn run_seeds<T: Send>(
        seeds: &[u64],
        jobs: usize,
        run: impl Fn(u64) -> T + Sync,
        failed: impl Fn(&T) -> bool + Sync,
    ) -> (Vec<(u64, T)>, f64) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Mutex;

        #[allow(clippy::disallowed_methods)] // wall-clock throughput of the explorer itself
        let began = std::time::Instant::now();
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<(u64, T)>> = Mutex::new(Vec::new());
        let worker = || {
            while let Some(&seed) = seeds.get(next.fetch_add(1, Ordering::SeqCst)) {
                let result = run(seed);
                let mut results = results.lock().unwrap_or_else(|e| e.into_inner());
                results.push((seed, result));
                let failures = results.iter().filter(|(_, r)| failed(r)).count();
                progress(
                    results.len() as u64,
                    seeds.len() as u64,
                    failures,
                    began.elapsed(),
                );
            }
        };
        // The children are separate processes; these threads only wait for them.
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(worker);
            }
        });
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprintln!();
        }
        let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        results.sort_by_key(|(seed, _)| *seed);
        (results, began.elapsed().as_secs_f64() / 60.0)
    }

    /// Runs `seeds` of `scenario` in child processes, `jobs` at a time, with a progress bar.
    fn explore_scenario(
        scenario: &'static str,
        seeds: &[u64],
        subject: SubjectKind,
        jobs: usize,
        known: &BTreeMap<u64, BTreeSet<String>>,
    ) -> Explored {
        let (results, minutes) = run_seeds(
            seeds,
            jobs,
            |seed| match run_seed_in_child(scenario, seed, subject) {
                Ok(outcome) => outcome,
                Err(e) => Outcome::Fail(format!("error: {e}"), Vec::new()),
            },
            |outcome| matches!(outcome, Outcome::Fail(..)),
        );
        Explored {
            results: results
                .into_iter()
                .map(|(seed, o)| {
                    let (verdict, first_violation) = match o {
                        Outcome::Fail(first, checkers) => {
                            let is_known = known.get(&seed).is_some_and(|known| {
                                !checkers.is_empty() && checkers.iter().all(|c| known.contains(c))
                            });
                            let verdict = if is_known {
                                Verdict::Known
                            } else {
                                Verdict::Fail
                            };
                            (verdict, Some(first))
                        }
                        Outcome::Pass => (Verdict::Pass, None),
                    };
                    SeedResult {
                        scenario: scenario.to_owned(),
                        subject: subject.name().to_owned(),
                        seed,
                        verdict,
                        first_violation,
                        repro: repro_line(scenario, seed, subject),
                    }
                })
                .collect(),
            minutes,
        }
    }

    /// The scenarios a command names: one, or every one with `--all`.
    fn chosen_scenarios(
        options: &Options<'_>,
    ) -> Result<Vec<&'static scenarios::ScenarioInfo>, String> {
        Ok(if options.flag("all") {
            scenarios::registry().iter().collect()
        } else {
            vec![scenario(options)?]
        })
    }

    /// `run --overshoot`: every completed or hung `poll` of the run and, of those that overran
    /// their timeout plus their callbacks' time, by how much (ms), for `overshoot` to gather.
    /// Time the member's whole process was paused (a family's GC-pause fault) does not count:
    /// no consumer returns from a frozen process.
    fn overshoot_line(history: &sim::history::History) -> String {
        let end_ms = history.end_ms();
        let pauses = scenarios::checks::process_pauses(history);
        let polls: Vec<u64> = sim::check::blocking_calls(history)
            .iter()
            .filter(|c| c.call == "poll")
            .map(|c| {
                let paused_ms: u64 = pauses
                    .iter()
                    .filter(|(subject, _, _)| subject == c.subject)
                    .map(|(_, from, to)| c.overlap_ms(*from, *to, end_ms))
                    .sum();
                c.overshoot_ms(end_ms).saturating_sub(paused_ms)
            })
            .collect();
        let late: Vec<String> = polls
            .iter()
            .filter(|&&ms| ms > 0)
            .map(u64::to_string)
            .collect();
        format!(
            "poll-overshoot: polls={} ms={}",
            polls.len(),
            late.join(",")
        )
    }

    /// One seed's polls: how many, and the overshoots above zero.
    fn overshoots_in_child(
        scenario: &str,
        seed: u64,
        subject: SubjectKind,
    ) -> Result<(u64, Vec<u64>), String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let output = std::process::Command::new(exe)
            .args(["run", scenario, "--seed", &seed.to_string(), "--overshoot"])
            .args(["--subject", subject.name()])
            .output()
            .map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let parsed = stdout.lines().find_map(|line| {
            let rest = line.strip_prefix("poll-overshoot: polls=")?;
            let (polls, ms) = rest.split_once(" ms=")?;
            let late = ms
                .split(',')
                .filter(|v| !v.is_empty())
                .map(str::parse)
                .collect::<Result<Vec<u64>, _>>()
                .ok()?;
            Some((polls.parse().ok()?, late))
        });
        parsed.ok_or_else(|| {
            format!(
                "seed {seed}: no poll-overshoot line ({})",
                String::from_utf8_lossy(&output.stderr).trim()
            )
        })
    }

    /// `overshoot SCENARIO|--all --seeds N`: how far `poll(d)` returned after its timeout
    /// (beyond the time its rebalance callbacks ran, on virtual time), the legacy model of the
    /// old two-thread consumer beside ours on the same seeds — the issue's "poll() overshoot
    /// during rebalances" figure. Every run in its own child process, as `explore`.
    fn overshoot(options: &Options<'_>) -> Result<ExitCode, String> {
        let infos = chosen_scenarios(options)?;
        let (seeds, jobs) = seeds_and_jobs(options)?;
        let tolerance_ms = sim::check::BlockingBounds::default().tolerance_ms;
        let mut rows = Vec::new();
        let mut errors = Vec::new();
        for info in infos {
            for subject in [SubjectKind::Legacy, SubjectKind::Consumer] {
                eprintln!("{} ({} seeds, subject {subject})", info.name, seeds.len());
                let (results, _) = run_seeds(
                    &seeds,
                    jobs,
                    |seed| overshoots_in_child(info.name, seed, subject),
                    Result::is_err,
                );
                let mut polls = 0u64;
                let mut late: Vec<(u64, u64)> = Vec::new();
                for (seed, result) in results {
                    match result {
                        Ok((n, ms)) => {
                            polls += n;
                            late.extend(ms.into_iter().map(|ms| (ms, seed)));
                        }
                        Err(e) => errors.push(format!("{} {subject}: {e}", info.name)),
                    }
                }
                late.sort_unstable();
                // The 99th percentile over every poll, the ones on time counting as zero.
                let rank = (polls * 99).div_ceil(100);
                let on_time = polls - late.len() as u64;
                let p99_ms = rank
                    .checked_sub(on_time + 1)
                    .and_then(|i| late.get(i as usize))
                    .map_or(0, |(ms, _)| *ms);
                let over = late.iter().filter(|(ms, _)| *ms > tolerance_ms).count();
                let max = late
                    .last()
                    .map_or("0".to_owned(), |(ms, seed)| format!("{ms} (seed {seed})"));
                rows.push(format!(
                    "{:<28} {:>8} {:>6} {polls:>8} {over:>10} {p99_ms:>7} {max:>16}",
                    info.name,
                    subject.name(),
                    seeds.len(),
                ));
            }
        }
        println!(
            "{:<28} {:>8} {:>6} {:>8} {:>10} {:>7} {:>16}",
            "scenario",
            "subject",
            "seeds",
            "polls",
            format!(">{tolerance_ms}ms late"),
            "p99 ms",
            "max ms"
        );
        for row in rows {
            println!("{row}");
        }
        for e in &errors {
            println!("error: {e}");
        }
        Ok(if errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }

    /// `explore SCENARIO|--all --seeds N`: every seed in its own child process; one summary
    /// row per scenario, then each failure with the line that reproduces it. The subject is
    /// our consumer unless `--subject legacy` (exploring looks for violations in it).
    fn explore(options: &Options<'_>) -> Result<ExitCode, String> {
        let infos = chosen_scenarios(options)?;
        let subject = options
            .value::<SubjectKind>("subject")?
            .unwrap_or(SubjectKind::Consumer);
        let (mine, jobs) = seeds_and_jobs(options)?;
        // Failures of our consumer a saved regression already records are counted apart:
        // they are known bugs, and the run fails only on new ones.
        let known = match subject {
            SubjectKind::Consumer => scenarios::regression::known_consumer_failures()?,
            SubjectKind::Legacy => BTreeMap::new(),
        };
        let mut explored = Vec::new();
        for info in infos {
            eprintln!("{} ({} seeds, subject {subject})", info.name, mine.len());
            let known: BTreeMap<u64, BTreeSet<String>> = known
                .iter()
                .filter(|((scenario, _), _)| scenario == info.name)
                .map(|((_, seed), checkers)| (*seed, checkers.clone()))
                .collect();
            explored.push(explore_scenario(info.name, &mine, subject, jobs, &known));
        }
        let results: Vec<SeedResult> = explored
            .iter()
            .flat_map(|e| e.results.iter().cloned())
            .collect();
        let minutes: BTreeMap<String, f64> = explored
            .iter()
            .filter_map(|e| Some((e.results.first()?.scenario.clone(), e.minutes)))
            .collect();
        write_reports(options, &results)?;
        Ok(report(&results, Some(&minutes)))
    }

    /// `--json FILE` (JSON lines, one per seed) and `--junit FILE`, when asked for.
    fn write_reports(options: &Options<'_>, results: &[SeedResult]) -> Result<(), String> {
        if let Some(path) = options.value::<String>("json")? {
            let lines: String = results.iter().map(|r| r.to_json_line() + "\n").collect();
            std::fs::write(&path, lines).map_err(|e| format!("{path}: {e}"))?;
        }
        if let Some(path) = options.value::<String>("junit")? {
            std::fs::write(&path, junit(results)).map_err(|e| format!("{path}: {e}"))?;
        }
        Ok(())
    }

    /// Prints the summary (one row per scenario, a total, then each failure with its repro)
    /// and fails on any failure no saved regression knows. `minutes` per scenario when the
    /// seeds ran here (a merge of other runs' results has no throughput to show).
    fn report(results: &[SeedResult], minutes: Option<&BTreeMap<String, f64>>) -> ExitCode {
        let rows = summarize(results);
        println!(
            "{:<28} {:>8} {:>6} {:>9} {:>6} {:>12}",
            "scenario", "subject", "seeds", "failures", "known", "seeds/minute"
        );
        let rate = |seeds: u64, minutes: Option<f64>| {
            minutes.map_or("-".to_owned(), |m| {
                format!("{:.1}", seeds as f64 / m.max(1e-9))
            })
        };
        for row in &rows {
            println!(
                "{:<28} {:>8} {:>6} {:>9} {:>6} {:>12}",
                row.scenario,
                row.subject,
                row.seeds,
                row.failures,
                row.known,
                rate(
                    row.seeds,
                    minutes.and_then(|m| m.get(&row.scenario).copied())
                )
            );
        }
        let seeds: u64 = rows.iter().map(|r| r.seeds).sum();
        let failed: u64 = rows.iter().map(|r| r.failures).sum();
        let known: u64 = rows.iter().map(|r| r.known).sum();
        if rows.len() > 1 {
            // Every column filled, as CI's summary reads the row by whitespace.
            let subject = match rows.first() {
                Some(first) if rows.iter().all(|r| r.subject == first.subject) => {
                    first.subject.as_str()
                }
                _ => "all",
            };
            println!(
                "{:<28} {subject:>8} {seeds:>6} {failed:>9} {known:>6} {:>12}",
                "total",
                rate(seeds, minutes.map(|m| m.values().sum()))
            );
        }
        for r in results.iter().filter(|r| r.verdict != Verdict::Pass) {
            let tag = if r.verdict == Verdict::Known {
                " (known: saved regression)"
            } else {
                ""
            };
            println!(
                "{} seed {}{tag}: {}",
                r.scenario,
                r.seed,
                r.first_violation.as_deref().unwrap_or("")
            );
            println!("  {}", r.repro);
        }
        if failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    /// `merge FILE... [--junit FILE]`: the JSON lines of several explore runs (shards, or
    /// slices by `--start`) as one summary and one JUnit report; a seed in two files keeps its
    /// result from the later one. Fails on any new failure, as `explore` does.
    fn merge(options: &Options<'_>) -> Result<ExitCode, String> {
        let files = &options.positional[1..];
        if files.is_empty() {
            return Err("merge which files? (explore --json FILE writes them)".to_owned());
        }
        let mut merged = BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            read_json_lines(&text, &mut merged).map_err(|e| format!("{file}: {e}"))?;
        }
        let results: Vec<SeedResult> = merged.into_values().collect();
        if let Some(path) = options.value::<String>("junit")? {
            std::fs::write(&path, junit(&results)).map_err(|e| format!("{path}: {e}"))?;
        }
        Ok(report(&results, None))
    }

    /// `sabotage`: the scenario library against the consumer's sabotage catalogue. `--list`
    /// prints the catalogue; `NAME...` or `--all` runs each entry over `--seeds` seeds of every
    /// scenario (seed-major) until a checker fails and prints what caught it; `--witnesses`
    /// checks that every recorded first catch still fails under its sabotage. `--scenarios`
    /// searches only those scenarios. Fails when an entry is not caught.
    fn sabotage(options: &Options<'_>) -> Result<ExitCode, String> {
        if options.flag("list") {
            for s in Sabotage::ALL {
                println!("{:<36} {}", s.name(), s.origin());
            }
            return Ok(ExitCode::SUCCESS);
        }
        let jobs: usize = options.value("jobs")?.unwrap_or(1).max(1);
        if options.flag("witnesses") {
            return sabotage_witnesses(jobs);
        }
        let chosen: Vec<Sabotage> = if options.flag("all") {
            Sabotage::ALL.to_vec()
        } else {
            options.positional[1..]
                .iter()
                .map(|name| {
                    Sabotage::from_name(name)
                        .ok_or_else(|| format!("no sabotage `{name}` (cargo sim sabotage --list)"))
                })
                .collect::<Result<_, _>>()?
        };
        if chosen.is_empty() {
            return Err("which sabotage? (NAME..., --all or --list)".to_owned());
        }
        let seeds: u64 = options.value("seeds")?.ok_or("--seeds N is required")?;
        let start: u64 = options.value("start")?.unwrap_or(0);
        let seeds: Vec<u64> = (start..start + seeds).collect();
        let scenarios: Vec<&str> = match options.value::<String>("scenarios")? {
            None => scenarios::registry().iter().map(|i| i.name).collect(),
            Some(list) => list
                .split(',')
                .map(|name| {
                    scenarios::find(name)
                        .map(|i| i.name)
                        .ok_or_else(|| format!("no scenario `{name}` (cargo sim list)"))
                })
                .collect::<Result<_, _>>()?,
        };
        let known: BTreeSet<(String, u64)> = scenarios::regression::known_consumer_failures()?
            .into_keys()
            .collect();
        let work = scenarios::sabotage::work_list(&scenarios, &seeds, &known);
        println!(
            "{:<36} {:<28} {:<30} {:>5} {:>6}  checkers",
            "sabotage", "origin", "caught by", "seed", "runs"
        );
        let mut missed = Vec::new();
        for sabotage in chosen {
            eprintln!("{} ({} runs at most)", sabotage.name(), work.len());
            let (catch, made) = scenarios::sabotage::first_catch(&work, jobs, |scenario, seed| {
                match run_sabotaged_in_child(scenario, seed, SubjectKind::Consumer, Some(sabotage))
                {
                    Ok(Outcome::Pass) => None,
                    Ok(Outcome::Fail(first, checkers)) => Some((checkers, first)),
                    Err(error) => Some((Vec::new(), format!("error: {error}"))),
                }
            });
            match catch {
                Some(c) => {
                    println!(
                        "{:<36} {:<28} {:<30} {:>5} {:>6}  {}",
                        sabotage.name(),
                        sabotage.origin(),
                        c.scenario,
                        c.seed,
                        c.runs,
                        c.checkers.join(",")
                    );
                    println!("    {}", c.first_violation);
                }
                None => {
                    println!(
                        "{:<36} {:<28} {:<30} {:>5} {:>6}  NOT CAUGHT",
                        sabotage.name(),
                        sabotage.origin(),
                        "-",
                        "-",
                        made
                    );
                    missed.push(sabotage.name());
                }
            }
        }
        if missed.is_empty() {
            Ok(ExitCode::SUCCESS)
        } else {
            println!("not caught: {}", missed.join(", "));
            Ok(ExitCode::FAILURE)
        }
    }

    /// `sabotage --witnesses`: each recorded first catch must still fail its checker under
    /// its sabotage, and pass without it (else the seed proves nothing about the sabotage).
    fn sabotage_witnesses(jobs: usize) -> Result<ExitCode, String> {
        let witnesses = scenarios::sabotage::WITNESSES;
        let indices: Vec<u64> = (0..witnesses.len() as u64).collect();
        let (results, _) = run_seeds(
            &indices,
            jobs,
            |at| {
                let w = &witnesses[at as usize];
                let sabotaged = match Sabotage::from_name(w.sabotage) {
                    Some(s) => {
                        run_sabotaged_in_child(w.scenario, w.seed, SubjectKind::Consumer, Some(s))
                    }
                    None => Err(format!("no sabotage `{}`", w.sabotage)),
                };
                let plain = run_seed_in_child(w.scenario, w.seed, SubjectKind::Consumer);
                (sabotaged, plain)
            },
            |_| false,
        );
        let mut failed = 0;
        for (at, outcome) in results {
            let w = witnesses[at as usize];
            let (sabotaged, plain) = &outcome;
            let verdict = match sabotaged {
                Ok(Outcome::Fail(..)) if !matches!(plain, Ok(Outcome::Pass)) => {
                    failed += 1;
                    "MISSED: fails without the sabotage too".to_owned()
                }
                Ok(Outcome::Fail(_, checkers)) if checkers.iter().any(|c| c == w.checker) => {
                    "caught".to_owned()
                }
                Ok(Outcome::Fail(_, checkers)) => {
                    failed += 1;
                    format!(
                        "MISSED: failed {} instead of {}",
                        checkers.join(","),
                        w.checker
                    )
                }
                Ok(Outcome::Pass) => {
                    failed += 1;
                    "MISSED: passed".to_owned()
                }
                Err(error) => {
                    failed += 1;
                    format!("MISSED: {error}")
                }
            };
            println!(
                "{:<36} {:<30} seed {:>4}  {:<28} {verdict}",
                w.sabotage, w.scenario, w.seed, w.checker
            );
        }
        println!(
            "{} witnesses, {} still caught",
            witnesses.len(),
            witnesses.len() - failed
        );
        Ok(if failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}
