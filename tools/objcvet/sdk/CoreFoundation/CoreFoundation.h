// CoreFoundation: the types and calls Delta uses (CFString, CFRelease).
#pragma once
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
typedef unsigned char Boolean;
typedef long CFIndex;
typedef const void *CFTypeRef;
typedef const struct __CFString *CFStringRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef uint32_t CFStringEncoding;
#define kCFStringEncodingUTF8 0x08000100
extern Boolean CFStringGetCString(CFStringRef theString, char *buffer, CFIndex bufferSize, CFStringEncoding encoding);
extern void CFRelease(CFTypeRef cf);
// CFArray.h
typedef const struct __CFArray *CFArrayRef;
extern CFIndex CFArrayGetCount(CFArrayRef theArray);
extern const void *CFArrayGetValueAtIndex(CFArrayRef theArray, CFIndex idx);
