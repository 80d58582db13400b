// SystemConfiguration: SCDynamicStore's name lookups (SCDynamicStoreCopySpecific.h).
#pragma once
#include <CoreFoundation/CoreFoundation.h>
typedef const struct __SCDynamicStore *SCDynamicStoreRef;
extern CFStringRef SCDynamicStoreCopyComputerName(SCDynamicStoreRef store, CFStringEncoding *nameEncoding);
extern CFStringRef SCDynamicStoreCopyLocalHostName(SCDynamicStoreRef store);
// SCNetworkConfiguration.h: the interfaces and their hardware ports.
typedef const struct __SCNetworkInterface *SCNetworkInterfaceRef;
extern CFArrayRef SCNetworkInterfaceCopyAll(void);
extern CFStringRef SCNetworkInterfaceGetBSDName(SCNetworkInterfaceRef interface);
extern CFStringRef SCNetworkInterfaceGetLocalizedDisplayName(SCNetworkInterfaceRef interface);
