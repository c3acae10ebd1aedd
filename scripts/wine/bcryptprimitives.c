/*
 * A stand-in for Windows' bcryptprimitives.dll, for running seekless.exe
 * under Wine in tests only (scripts/check-platforms.sh and check-wheels.sh
 * build it and put it beside the exe under test). Never shipped: real Windows (8 and later) has
 * the DLL.
 *
 * Why: Rust's standard library (1.78 and later) gets its random bytes (the
 * seeds of HashMap's hasher, among others) from ProcessPrng in
 * bcryptprimitives.dll. Wine 8.0, as Debian 12 ships it, has no such
 * export, so the loader refuses the exe before main runs. This DLL exports
 * ProcessPrng over RtlGenRandom (advapi32's SystemFunction036), which every
 * Wine has; Wine loads a DLL beside the exe before its own.
 *
 * Build (Debian's gcc-mingw-w64-x86-64):
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll \
 *       bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

/* advapi32's RtlGenRandom, exported as SystemFunction036. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* ProcessPrng fills the buffer with random bytes and always returns TRUE
 * (Windows' documented contract: it cannot fail). RtlGenRandom takes a
 * ULONG length, so larger requests are served in pieces. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG piece = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, piece))
            return FALSE;
        data += piece;
        length -= piece;
    }
    return TRUE;
}
