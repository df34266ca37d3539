//! Properties-file configuration as users feed it in: `parse_properties`, then every pair
//! through the config builder and its validation.
//!
//! Properties: no panic, bounded allocation; a parse error or a config error renders; parsing
//! is deterministic and keeps at most one pair per logical line.
#![no_main]

use kafka_consumer::config::{parse_properties, ConsumerConfig};
use kafka_consumer_fuzz::with_alloc_cap;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let alloc_cap = 64 * text.len() + (1 << 20);
    with_alloc_cap(alloc_cap, || match parse_properties(text) {
        Ok(pairs) => {
            assert!(pairs.len() <= text.split(['\n', '\r']).count());
            assert_eq!(parse_properties(text).ok().as_ref(), Some(&pairs));
            let mut builder = ConsumerConfig::builder();
            for (key, value) in pairs {
                builder = builder.set(key, value);
            }
            if let Err(error) = builder.build_with_warnings() {
                assert!(!error.to_string().is_empty());
            }
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    });
});
