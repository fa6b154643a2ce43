"""
Peak resident memory (RSS) of this process, for the benchmarks: the peak so far, and the peak of one phase of the
work. On Linux a phase's peak is read after resetting the kernel's high-water mark (writing 5 to
/proc/self/clear_refs resets VmHWM in /proc/self/status); elsewhere only the process's peak is known. Before the
reset, glibc's malloc_trim hands the heap memory freed so far back to the system, so that what loading a model
freed but the allocator kept does not count in the phase: it counts what is live, and what the phase allocates.

    loading = peak_mib()            # the whole process so far: interpreter, libraries, loading the model
    phase = reset_peak()            # False where a phase's peak cannot be told apart
    ...                             # the timed work
    print(describe(loading, phase))
"""
import ctypes
import resource
import sys


def peak_mib():
    """The process's peak RSS so far in MiB (getrusage's ru_maxrss: kB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def reset_peak():
    """Return freed heap memory to the system (malloc_trim, where glibc has it), then reset the high-water mark,
    so that phase_peak_mib() reads the peak from here on. -> whether it could."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return phase_peak_mib() is not None
    except OSError:
        return False


def phase_peak_mib():
    """The peak RSS in MiB since the last reset_peak (VmHWM), or None where /proc/self/status has none."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) / 2**10 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None


def describe(loading, phase):
    """One line: the process's peak up to the timed work (loading included) and the peak during it."""
    during = f"{phase_peak_mib():,.0f} MiB during the timed work" if phase else "the timed work's own peak unknown here"
    return f"peak memory (RSS): {loading:,.0f} MiB up to the timed work (loading included), {during}"
