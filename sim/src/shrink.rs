//! Delta debugging (Zeller's ddmin): shrink a failing fault plan to a 1-minimal one.
//!
//! A failure found by a random plan usually needs only two or three of its faults; the rest are
//! noise that makes the replay hard to read. `ddmin` removes chunks of the plan, keeping any
//! smaller plan that still fails, until removing any single fault makes the failure go away.
//! The predicate is a full deterministic replay (same seed, candidate plan), so every answer is
//! reproducible.

/// The smallest subsequence of `items` found for which `fails` still holds, preserving order.
/// `fails(items)` is assumed true; each removal is tried by calling `fails` on the candidate.
/// 1-minimal: removing any single remaining item makes `fails` false.
pub fn ddmin<T: Clone>(items: &[T], mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
    let mut current: Vec<T> = items.to_vec();
    let mut chunks = 2usize;
    while current.len() >= 2 {
        let chunk_len = current.len().div_ceil(chunks);
        let mut reduced = false;
        // Try each complement: everything except one chunk.
        for start in (0..current.len()).step_by(chunk_len) {
            let end = (start + chunk_len).min(current.len());
            let complement: Vec<T> = current[..start]
                .iter()
                .chain(&current[end..])
                .cloned()
                .collect();
            if fails(&complement) {
                current = complement;
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
        }
        if reduced {
            continue;
        }
        if chunks >= current.len() {
            break;
        }
        chunks = (chunks * 2).min(current.len());
    }
    if current.len() == 1 && fails(&[]) {
        current.clear();
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_two_faults_that_matter() {
        let plan: Vec<u32> = (0..40).collect();
        let mut calls = 0;
        let minimal = ddmin(&plan, |candidate| {
            calls += 1;
            candidate.contains(&7) && candidate.contains(&31)
        });
        assert_eq!(minimal, vec![7, 31]);
        assert!(calls < 200, "ddmin took {calls} replays");
    }

    #[test]
    fn keeps_order_and_handles_single_and_empty_culprits() {
        let plan = ["kill", "clog", "restart", "hold"];
        assert_eq!(ddmin(&plan, |c| c.contains(&"hold")), vec!["hold"]);
        assert_eq!(
            ddmin(&plan, |c| {
                let kill = c.iter().position(|f| *f == "kill");
                let restart = c.iter().position(|f| *f == "restart");
                matches!((kill, restart), (Some(k), Some(r)) if k < r)
            }),
            vec!["kill", "restart"]
        );
        assert!(ddmin(&plan, |_| true).is_empty(), "fails without any fault");
    }

    #[test]
    fn result_is_one_minimal() {
        let plan: Vec<u32> = (0..23).collect();
        let fails = |c: &[u32]| c.iter().filter(|x| *x % 5 == 0).count() >= 3;
        let minimal = ddmin(&plan, fails);
        assert!(fails(&minimal));
        for i in 0..minimal.len() {
            let mut without = minimal.clone();
            without.remove(i);
            assert!(!fails(&without), "removing {} still fails", minimal[i]);
        }
    }
}
