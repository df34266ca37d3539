//! Saved `.regression` files: `scenarios::regression::Regression::parse`.
//!
//! Properties: no panic, bounded allocation; a file that parses prints (`Display`) to text that
//! parses to the same regression.
#![no_main]

use kafka_consumer_fuzz::with_alloc_cap;
use libfuzzer_sys::fuzz_target;
use scenarios::regression::Regression;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    with_alloc_cap(64 * text.len() + (64 << 10), || {
        match Regression::parse(text) {
            Ok(regression) => {
                let printed = regression.to_string();
                let again = Regression::parse(&printed).unwrap_or_else(|e| {
                    panic!("printed regression {printed:?} does not parse: {e}")
                });
                assert_eq!(again, regression, "printed as {printed:?}");
            }
            Err(error) => assert!(!error.to_string().is_empty()),
        }
    });
});
