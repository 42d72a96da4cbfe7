//! An allocator for processes that run the engine: the system's, asking the kernel to back
//! large buffers (a chunk's room, 2 MiB and more) with transparent huge pages. The command and
//! the Python extension install it (`#[global_allocator]`); the library does not impose it.
//!
//! Why: every chunk buffer is touched once from fresh pages, and with 4 KiB pages an 8 MiB buffer
//! costs 2,048 page faults before a byte of it is used. Decrypting the 256 MiB JSON corpus on two
//! threads took 9,177 faults, 11 % of its CPU time in the kernel; with huge pages 2,973, and the
//! run is 8 % shorter (docs/PERFORMANCE.md §1). Small allocations are left alone, and where the
//! kernel's THP setting is `never` the advice is ignored.
//!
//! `unsafe`: implementing [`GlobalAlloc`] is unsafe by definition. Each method forwards to
//! [`System`] with the caller's own arguments, so the contract is the caller's to keep, as it
//! would be with `System` itself. The advice is given only for whole 2 MiB pages inside the block
//! just returned (which this process owns and nothing else refers to yet); `MADV_HUGEPAGE`
//! changes neither the memory's contents nor its mapping, only how the kernel backs it, and a
//! failure of the call is ignored (the pages stay 4 KiB).
//!
//! [`return_large_blocks`] is the other `unsafe` here: one call of glibc's `mallopt`, which
//! changes a setting of the allocator, not any memory.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

const HUGE: usize = 2 << 20;

/// The system allocator, with huge pages advised for blocks of 4 MiB and more. Install it with
/// `#[global_allocator] static A: zseal::alloc::HugeForLarge = zseal::alloc::HugeForLarge;`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HugeForLarge;

/// Advises huge pages for the whole 2 MiB pages inside `buf` when it is 4 MiB or more (a
/// buffer the caller owns alone, such as the fresh `bytes` a large Python read fills): its
/// contents do not change, only how the kernel backs it.
pub fn advise_huge_pages(buf: &mut [u8]) {
    advise(buf.as_mut_ptr(), buf.len());
}

/// Advises huge pages for the whole 2 MiB pages within the block of `len` bytes at `ptr`, when
/// it is a large one (and was allocated); returns `ptr`.
fn advise(ptr: *mut u8, len: usize) -> *mut u8 {
    #[cfg(target_os = "linux")]
    if len >= 2 * HUGE && !ptr.is_null() {
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize).saturating_add(len) / HUGE * HUGE;
        if let Some(p) = std::ptr::NonNull::new(start as *mut std::ffi::c_void) {
            // SAFETY: see the module documentation; [start, end) lies inside the block, and
            // holds at least one whole 2 MiB page since the block is at least two long.
            let _ = unsafe {
                nix::sys::mman::madvise(p, end - start, nix::sys::mman::MmapAdvise::MADV_HUGEPAGE)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = len;
    ptr
}

/// Blocks of this size and more go straight to the kernel (`mmap`) and back to it when freed.
pub const LARGE_BLOCK: usize = 1 << 20;

/// Makes the allocator give every block of [`LARGE_BLOCK`] bytes or more back to the kernel when
/// it is freed, for a long-running process whose requests each take and free a window of chunk
/// buffers on threads of their own (`zseal serve s3`). Call it once, before the threads start.
/// Returns whether the setting was made (glibc on Linux; elsewhere nothing is done).
///
/// Why: glibc serves large blocks by `mmap`, but raises that threshold to the size of each such
/// block freed (up to 32 MiB), so that after the first request the 8 MiB chunk buffers come
/// from its arenas (one per thread that allocates, up to 8 per core) and stay there, split and
/// half used, once freed: the gateway under its load test then held nearly three times what its
/// chunk buffers need; with the threshold fixed at 1 MiB (which also turns the raising off) it
/// stays within them (figures: docs/PERFORMANCE.md §13). Blocks
/// under 1 MiB (a GET's 256 KiB pieces, HTTP buffers) stay in the arenas, where they are reused
/// without a system call. A freshly mapped buffer costs its page faults again, once per request
/// (the engine reuses its buffers within a stream), not once per chunk.
pub fn return_large_blocks() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::libc::{c_int, mallopt, M_MMAP_THRESHOLD};
        // SAFETY: mallopt changes a setting of glibc's allocator and touches no memory of ours;
        // a value it refuses leaves the setting as it was and returns 0.
        let set = unsafe { mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK as c_int) };
        set == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

unsafe impl GlobalAlloc for HugeForLarge {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (module documentation).
        advise(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (module documentation).
        advise(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged (module documentation).
        advise(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (module documentation).
        unsafe { System.dealloc(ptr, layout) }
    }
}
