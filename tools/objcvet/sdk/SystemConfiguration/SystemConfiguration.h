// SystemConfiguration: SCDynamicStore's name lookups (SCDynamicStoreCopySpecific.h).
#pragma once
#include <CoreFoundation/CoreFoundation.h>
typedef const struct __SCDynamicStore *SCDynamicStoreRef;
extern CFStringRef SCDynamicStoreCopyComputerName(SCDynamicStoreRef store, CFStringEncoding *nameEncoding);
extern CFStringRef SCDynamicStoreCopyLocalHostName(SCDynamicStoreRef store);
