//! The `mcp-sieve` binary: the allocator and its settings, then the command line
//! ([`mcp_sieve_server::commands::run`]). Everything else is the library (`src/lib.rs`).

/// mimalloc, not the C library's malloc: a fifth of the CPU of a `tools/list` under load went to
/// glibc's malloc and free (scripts/bench-native.sh, perf). Freed memory goes back to the system
/// at once (`give_back_freed_memory`, first thing in `main`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: 15 in `mi_option_e` of its `include/mimalloc.h` (v3, the
/// version libmimalloc-sys builds by default; v2's too); the crate's Rust constants stop before it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc purges (gives back to the system) the memory it frees at once instead of a second later
/// (v3's default): a delayed purge happens only when the allocator runs again, so a burst of large
/// requests left its memory resident (72-87 MB more after forty ~900 KB bodies,
/// tests/security/sessions-answers.test.mjs); glibc's malloc gave it back. MIMALLOC_PURGE_DELAY in
/// the environment still decides when set.
fn give_back_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an integer option; mimalloc reads it at each purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
    }
}

fn main() {
    give_back_freed_memory();
    mcp_sieve_server::commands::run();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_mimallocs_and_set_to_zero() {
        // SAFETY: reads an integer option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(
                get(),
                1000,
                "mimalloc v3's default purge delay is 1 s: the index names it"
            );
        }
        give_back_freed_memory();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(), 0);
        }
    }
}
