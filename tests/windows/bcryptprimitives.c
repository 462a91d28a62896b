/* bcryptprimitives.dll for Wine 8 (the Windows lane, scripts/test-windows.sh): Rust's standard
 * library imports ProcessPrng from it for its random numbers (HashMap keys, among others), and
 * Wine 8 has no such export, so a Rust x86_64-pc-windows-gnu program does not start. This DLL,
 * put beside the .exe, gives ProcessPrng over RtlGenRandom (advapi32's SystemFunction036), which
 * Wine has. Not shipped: Windows itself has ProcessPrng since Windows 10. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size)
{
    while (size > 0) {
        ULONG chunk = size > 0x40000000 ? 0x40000000 : (ULONG)size;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
