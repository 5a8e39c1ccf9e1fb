/* bcryptprimitives.dll for Wine, which lacks it (Debian's Wine 8): Rust's standard library takes its random bytes
 * from ProcessPrng, exported by this DLL on Windows 10 and later, so no Rust program for Windows starts without it.
 * This one export fills the buffer from RtlGenRandom (advapi32's SystemFunction036), which Wine has. Built by zig
 * and put beside agent-read.exe by .ci/wine, for the tests only: it never ships. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG part = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, part)) {
            return FALSE;
        }
        data += part;
        length -= part;
    }
    return TRUE;
}
