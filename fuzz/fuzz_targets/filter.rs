//! The filter parser and evaluator: any JSON as `filter` → a filter or a -32602 error; a parsed
//! filter evaluates on the index exactly as the plain loop does.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_sieve::concern::ConcernConfig;
use mcp_sieve::filter::naive;
use mcp_sieve::model::Kind;
use mcp_sieve::{Catalog, Filter};
use serde_json::Value;

fn fixture() -> &'static (Value, Catalog) {
    static F: OnceLock<(Value, Catalog)> = OnceLock::new();
    F.get_or_init(|| {
        let doc: Value = serde_json::from_str(include_str!("../../catalog/default.json")).unwrap();
        let catalog = Catalog::load(&doc).unwrap();
        (doc, catalog)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else { return };
    match Filter::parse(&v, "filter") {
        Ok(f) => {
            let (doc, catalog) = fixture();
            let s = catalog.section(Kind::Tool);
            let fast: Vec<&str> = s.select(&f, &ConcernConfig::new()).ones().map(|i| s.items[i].name.as_str()).collect();
            let slow: Vec<&str> =
                naive::filter(doc, "tools", &f, &ConcernConfig::new()).iter().filter_map(|t| t["name"].as_str()).collect();
            assert_eq!(fast, slow);
        }
        Err(e) => assert_eq!(e.code(), -32602),
    }
});
