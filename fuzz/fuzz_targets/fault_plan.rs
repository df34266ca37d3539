//! Fault plans as users write them (`sim --plan`, a regression's `plan =` lines):
//! `sim::fault::text::parse_plan`.
//!
//! Properties: no panic, bounded allocation; a plan that parses prints (`plan_to_string`) to
//! text that parses to the same plan.
#![no_main]

use kafka_consumer_fuzz::with_alloc_cap;
use libfuzzer_sys::fuzz_target;
use sim::fault::text::{parse_plan, plan_to_string};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    with_alloc_cap(64 * text.len() + (64 << 10), || match parse_plan(text) {
        Ok(plan) => {
            let printed = plan_to_string(&plan);
            let again = parse_plan(&printed)
                .unwrap_or_else(|e| panic!("printed plan {printed:?} does not parse: {e}"));
            assert_eq!(again, plan, "printed as {printed:?}");
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    });
});
